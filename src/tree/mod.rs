//! The whole tree in memory, shared by `dfdu scan` and `dfdu browse`: the `Arena`
//! (every entry in 8 bytes plus its name, readable while a scan writes it), the scanner's
//! sink that fills it (`sink`), ncdu's JSON export and import (`ncdu`), the
//! sharing-aware figures per directory (`sharing`), two trees matched by path
//! (`compare`) and the SVG treemap (`treemap`).

pub mod arena;
pub mod compare;
pub mod ncdu;
pub mod path;
pub mod roots;
pub mod sharing;
pub mod sink;
pub mod top;
pub mod treemap;
