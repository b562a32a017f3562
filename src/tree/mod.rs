//! The whole tree in memory, shared by `dfdu scan` and `dfdu browse`: the `Arena`
//! (every entry in 8 bytes plus its name, readable while a scan writes it), the scanner's
//! sink that fills it (`sink`), ncdu's JSON export and import (`ncdu`), the
//! sharing-aware figures per directory (`shared`), two trees matched by path (`diff`)
//! and the SVG treemap (`treemap`).

pub mod arena;
pub mod diff;
pub mod ncdu;
pub mod path;
pub mod roots;
pub mod shared;
pub mod sink;
pub mod top;
pub mod treemap;
