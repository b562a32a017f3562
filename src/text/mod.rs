//! Text in GNU's formats, with no I/O: sizes and their units (`units`), names quoted for
//! messages (`quote`), `--time-style` formats (`timefmt`) and `--exclude` glob patterns
//! (`exclude`). The lowest layer above `meta`: it imports nothing but `meta`.

pub mod exclude;
pub mod quote;
pub mod timefmt;
pub mod units;
