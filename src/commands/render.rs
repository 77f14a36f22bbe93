//! `render(template, data?, partials?, config?)`: the Mustache engine (`crate::render`) as a
//! command. Everything a render does, and the protocol of a render whose view holds functions,
//! is the engine's (`src/render/README.md`); this file only names the command and hands its
//! params over.

use crate::rpc::packed::Packed;
use crate::rpc::{Command, Context, RpcError, Value};

pub struct Render;

impl Command for Render {
    fn name(&self) -> &'static str {
        "render"
    }
    fn params(&self) -> &'static str {
        "template: string, data?: JSON value (JSON text with config.data 'json'), \
         partials?: { [name]: string }, config?: [open, close] | { tags?, escape?, output?, data?, name? }"
    }
    fn summary(&self) -> &'static str {
        "renders a Mustache template; output identical to mustache.js 4.2.0"
    }
    fn run(&self, params: Vec<Value>, ctx: &Context) -> Result<Value, RpcError> {
        crate::render::run(params, ctx)
    }
    fn run_packed(&self, packed: Packed, ctx: &Context) -> Result<Value, RpcError> {
        crate::render::run_packed(packed, ctx)
    }
}
