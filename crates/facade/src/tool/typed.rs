//! Tools with typed arguments: one blanket [`Tool`] implementation parses them.

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{CallContext, Tool, ToolResult, ToolSpec, parse_args};

/// A tool whose arguments are a type. Implement this instead of [`Tool`]: the arguments arrive
/// parsed (the surface validated them against the spec's schema first; what still fails to
/// parse is answered with an error naming the argument, and `run` is not called).
///
/// ```
/// use agent_tools::{CallContext, Tier, ToolResult, ToolSpec, TypedTool};
/// use async_trait::async_trait;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct GreetArgs {
///     /// Who to greet.
///     name: String,
/// }
///
/// struct Greet(ToolSpec);
///
/// #[async_trait]
/// impl TypedTool for Greet {
///     type Args = GreetArgs;
///     fn spec(&self) -> &ToolSpec {
///         &self.0
///     }
///     async fn run(&self, _ctx: &CallContext, args: GreetArgs) -> ToolResult {
///         ToolResult::text(format!("hello, {}", args.name))
///     }
/// }
///
/// let greet = Greet(ToolSpec::new::<GreetArgs>("greet", "Greets someone.", Tier::Read));
/// # let _ = greet;
/// ```
#[async_trait]
pub trait TypedTool: Send + Sync {
    /// The arguments, as the spec's input schema describes them.
    type Args: DeserializeOwned + Send;

    fn spec(&self) -> &ToolSpec;

    async fn run(&self, ctx: &CallContext, args: Self::Args) -> ToolResult;
}

#[async_trait]
impl<T: TypedTool> Tool for T {
    fn spec(&self) -> &ToolSpec {
        TypedTool::spec(self)
    }

    async fn call(&self, ctx: &CallContext, args: Value) -> ToolResult {
        match parse_args::<T::Args>(&TypedTool::spec(self).name, args) {
            Ok(args) => self.run(ctx, args).await,
            Err(refused) => refused,
        }
    }
}
