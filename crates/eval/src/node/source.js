// A cell's source in the Node runner: static imports rewritten to awaited dynamic ones, `require`
// and `import()` resolved from the working directory, TypeScript's types stripped.

// `import()` works in the bootstrap's `-e` script, not in code run by `vm`: it lends us its own.
const dynamicImport = globalThis.__agentToolsDynamicImport;
delete globalThis.__agentToolsDynamicImport;

const cellRequire = Module.createRequire(path.join(process.cwd(), '[agent-tools-cell]'));
globalThis.require = cellRequire;

/** `import()` of a built-in, a project package (resolved from the working directory) or a file. */
async function importModule(specifier) {
  let target = specifier;
  if (!specifier.startsWith('node:') && !Module.isBuiltin(specifier)) {
    try {
      target = pathToFileURL(cellRequire.resolve(specifier)).href;
    } catch {
      const local = path.resolve(process.cwd(), specifier);
      if (fs.existsSync(local)) target = pathToFileURL(local).href;
    }
  }
  return dynamicImport(target);
}
globalThis.__agentToolsImport = importModule;

/** Static imports become awaited dynamic ones; `import(` becomes the runner's resolver. */
function rewriteImports(code) {
  const bindings = (clause) => {
    clause = clause.trim();
    const star = clause.match(/^\*\s+as\s+([\w$]+)$/);
    if (star) return [`const ${star[1]} = __m;`];
    const out = [];
    const named = clause.match(/\{([^}]*)\}/);
    const def = clause.replace(/\{[^}]*\}/, '').replace(/,/g, ' ').trim();
    const defStar = def.match(/^([\w$]+)\s+\*\s+as\s+([\w$]+)$/);
    if (defStar) {
      out.push(`const ${defStar[1]} = __m.default ?? __m;`, `const ${defStar[2]} = __m;`);
    } else if (def.startsWith('* as')) {
      out.push(`const ${def.slice(4).trim()} = __m;`);
    } else if (def) {
      out.push(`const ${def} = __m.default ?? __m;`);
    }
    if (named) {
      const parts = named[1].split(',').map((p) => p.trim()).filter(Boolean)
        .map((p) => p.replace(/\s+as\s+/, ': '));
      out.push(`const { ${parts.join(', ')} } = __m;`);
    }
    return out;
  };
  let n = 0;
  code = code.replace(/^[ \t]*import\s+([^'"]+?)\s+from\s+(['"][^'"]+['"])\s*;?/gm, (_, clause, spec) => {
    const m = `__agentToolsModule${n++}`;
    return `const ${m} = await __agentToolsImport(${spec}); ` + bindings(clause).map((b) => b.replace(/__m/g, m)).join(' ');
  });
  code = code.replace(/^[ \t]*import\s+(['"][^'"]+['"])\s*;?/gm, (_, spec) => `await __agentToolsImport(${spec});`);
  return code.replace(/(^|[^\w$.])import\s*\(/g, '$1__agentToolsImport(');
}

const stripTypes = require('node:module').stripTypeScriptTypes;
const TYPESCRIPT = process.env.AGENT_TOOLS_TYPESCRIPT === '1' && typeof stripTypes === 'function';
delete process.env.AGENT_TOOLS_TYPESCRIPT;
