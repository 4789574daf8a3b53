//! Tree-sitter's allocator: mimalloc in place of the C library's malloc (cargo feature `mimalloc`).
//!
//! A parse allocates and frees subtrees, stack nodes and lexer buffers by the million; with
//! glibc's malloc that was about 12% of a cold search's CPU. Only tree-sitter's C library is
//! pointed at mimalloc (`ts_set_allocator`): the process's Rust allocator is left alone.

/// Points tree-sitter at mimalloc, once per process, before the first tree-sitter object
/// exists (every parser of this crate is made by `LangData::parser`, which calls this first).
/// An object allocated by one allocator must be freed by the same, so a process that makes
/// tree-sitter objects outside this crate before its first search must build without the
/// `mimalloc` feature.
pub(crate) fn init() {
    #[cfg(feature = "mimalloc")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: runs once, before this crate has made any tree-sitter object (so nothing
            // allocated by malloc is later freed by mimalloc), and `Once` keeps other threads
            // from using tree-sitter while the pointers change. The four functions have the C
            // signatures tree-sitter expects.
            unsafe {
                tree_sitter::set_allocator(
                    Some(libmimalloc_sys::mi_malloc),
                    Some(calloc),
                    Some(libmimalloc_sys::mi_realloc),
                    Some(libmimalloc_sys::mi_free),
                );
            }
        });
    }
}

/// `calloc` on mimalloc: `mi_calloc` is behind the sys crate's `extended` feature (and its
/// `cty` dependency), `mi_zalloc` is not.
#[cfg(feature = "mimalloc")]
unsafe extern "C" fn calloc(count: usize, size: usize) -> *mut std::ffi::c_void {
    match count.checked_mul(size) {
        // SAFETY: mi_zalloc takes any size and returns null when it cannot allocate.
        Some(bytes) => unsafe { libmimalloc_sys::mi_zalloc(bytes) },
        None => std::ptr::null_mut(),
    }
}
