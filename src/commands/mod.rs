//! The built-in commands, one file each. [`registry`] is the one list of them.

mod echo;
mod fibonacci;
mod happycoin;
mod life;
mod locked_add;
mod panic;
mod render;
mod sleep;
mod square_sum;

pub use happycoin::{is_happy, is_happycoin, Rng};

use crate::rpc::Registry;

/// Every built-in command. Adding a command is one line here.
pub fn registry() -> Registry {
    let mut r = Registry::new();
    r.register(echo::Echo)
        .register(sleep::Sleep)
        .register(square_sum::SquareSum)
        .register(fibonacci::Fibonacci)
        .register(happycoin::Happycoin)
        .register(render::Render)
        .register(life::Life)
        .register(locked_add::LockedAdd)
        .register(panic::Panic);
    r
}
