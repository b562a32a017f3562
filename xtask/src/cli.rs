//! The small command-line toolkit shared by the subcommands: an argument cursor, core
//! count and number formatting. Parsing only; each subcommand validates its own values.

use std::collections::VecDeque;
use std::ffi::OsString;

/// One command-line item: an option (`--name`, value not yet taken) or a positional.
pub enum Arg {
    Opt(String),
    Pos(OsString),
}

/// A cursor over the arguments of one subcommand. Accepts `--name value` and
/// `--name=value`; everything after `--` is positional.
pub struct Args {
    items: VecDeque<OsString>,
    inline_value: Option<OsString>,
    positional_only: bool,
}

impl Args {
    pub fn new(items: Vec<OsString>) -> Args {
        Args { items: items.into(), inline_value: None, positional_only: false }
    }

    pub fn next(&mut self) -> Result<Option<Arg>, String> {
        if let Some(value) = self.inline_value.take() {
            return Err(format!("unexpected value {}", value.to_string_lossy()));
        }
        let Some(item) = self.items.pop_front() else {
            return Ok(None);
        };
        if self.positional_only {
            return Ok(Some(Arg::Pos(item)));
        }
        let text = item.to_string_lossy();
        if text == "--" {
            self.positional_only = true;
            return self.next();
        }
        if !text.starts_with('-') || text == "-" {
            return Ok(Some(Arg::Pos(item)));
        }
        match text.split_once('=') {
            Some((name, value)) if name.starts_with("--") => {
                self.inline_value = Some(OsString::from(value));
                Ok(Some(Arg::Opt(name.to_string())))
            }
            _ => Ok(Some(Arg::Opt(text.into_owned()))),
        }
    }

    pub fn value(&mut self, name: &str) -> Result<OsString, String> {
        self.inline_value.take().or_else(|| self.items.pop_front()).ok_or_else(|| format!("{name} needs a value"))
    }

    pub fn value_u64(&mut self, name: &str) -> Result<u64, String> {
        let value = self.value(name)?;
        let text = value.to_string_lossy();
        text.replace('_', "").parse().map_err(|_| format!("{name}: not a number: {text}"))
    }

    /// Errors if an option that takes no value was written as `--name=value`.
    pub fn no_value(&mut self, name: &str) -> Result<(), String> {
        match self.inline_value.take() {
            Some(_) => Err(format!("{name} takes no value")),
            None => Ok(()),
        }
    }
}

pub fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// 1234567 -> "1,234,567".
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (idx, digit) in digits.chars().enumerate() {
        if idx > 0 && (digits.len() - idx) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Signed version of `group`: "+1,234" / "-1,234" / "0".
pub fn group_signed(n: i128) -> String {
    let magnitude = group(n.unsigned_abs() as u64);
    match n.signum() {
        1 => format!("+{magnitude}"),
        -1 => format!("\u{2212}{magnitude}"),
        _ => magnitude,
    }
}
