//! The report header: what machine, kernel and filesystem the numbers come from, and when.
//! Everything is read from /proc; a field that cannot be read says "unknown".

use std::fs;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

pub struct Machine {
    pub cpu_model: String,
    pub n_cpus_online: usize,
    pub n_cpus_available: usize,
    pub memory_gib: f64,
    pub kernel: String,
}

pub fn machine() -> Machine {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|line| line.starts_with("model name"))
        .and_then(|line| line.split_once(':'))
        .map_or_else(|| "unknown".to_string(), |(_, model)| model.trim().to_string());
    let n_cpus_online = cpuinfo.lines().filter(|line| line.starts_with("processor")).count();
    let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory_kib: u64 = meminfo
        .lines()
        .find(|line| line.starts_with("MemTotal:"))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0);
    let kernel =
        fs::read_to_string("/proc/sys/kernel/osrelease").map_or_else(|_| "unknown".into(), |k| k.trim().into());
    Machine {
        cpu_model,
        n_cpus_online,
        n_cpus_available: crate::cli::available_cores(),
        memory_gib: memory_kib as f64 / (1024.0 * 1024.0),
        kernel,
    }
}

/// "ext4 on /dev/vda, mounted at / (rw,relatime; superblock rw,discard,…)" for the mount
/// holding `dir`: the longest mount point in /proc/self/mountinfo that is a prefix of `dir`.
pub fn filesystem_of(dir: &Path) -> String {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut best: Option<(usize, String)> = None;
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        if left.len() < 6 || right.len() < 2 {
            continue;
        }
        let mount_point = unescape_octal(left[4]);
        let covers = dir.starts_with(&mount_point);
        let longer = match &best {
            Some((best_len, _)) => mount_point.len() >= *best_len,
            None => true,
        };
        if covers && longer {
            let (fs_type, source, super_options) = (right[0], right[1], right.get(2).unwrap_or(&""));
            let mount_options = left[5];
            let description = format!(
                "{fs_type} on {source}, mounted at {mount_point} ({mount_options}; superblock {super_options})"
            );
            best = Some((mount_point.len(), description));
        }
    }
    best.map_or_else(|| "unknown".to_string(), |(_, description)| description)
}

/// mountinfo writes space, tab, newline and backslash as `\040`-style octal escapes.
pub fn unescape_octal(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut pos = 0;
    while pos < bytes.len() {
        let octal = bytes.get(pos + 1..pos + 4).and_then(|digits| std::str::from_utf8(digits).ok());
        match (bytes[pos], octal.and_then(|digits| u8::from_str_radix(digits, 8).ok())) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                pos += 4;
            }
            (byte, _) => {
                out.push(byte);
                pos += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The 1, 5 and 15 minute load averages, as /proc/loadavg gives them.
pub fn load_average() -> String {
    let text = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// (UTC date "YYYY-MM-DD", UTC time "HH:MM:SS") now.
pub fn utc_now() -> (String, String) {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, secs_of_day) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    let (hour, minute, second) = (secs_of_day / 3600, secs_of_day % 3600 / 60, secs_of_day % 60);
    (format!("{year:04}-{month:02}-{day:02}"), format!("{hour:02}:{minute:02}:{second:02}"))
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day); Howard Hinnant's
/// `civil_from_days`.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
