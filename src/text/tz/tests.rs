//! Unit tests of the zone code. The POSIX strings' expected times are what glibc 2.36's
//! `localtime_r` printed for them on Debian 12; the zone files are built in memory, with
//! expectations that follow from how they are built (the same kinds of files are checked
//! against GNU du in `tests/du_compat.rs`, `time_zones`).

use super::*;
use std::collections::HashMap;

/// `lt` as "YYYY-MM-DD HH:MM:SS OFFSET NAME", the offset in seconds with its sign.
fn show(lt: &LocalTime) -> String {
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} {:+} {}",
        lt.year,
        lt.month,
        lt.day,
        lt.hour,
        lt.minute,
        lt.second,
        lt.gmtoff,
        String::from_utf8_lossy(&lt.zone)
    )
}

fn posix(spec: &str) -> Zone {
    Zone::Rules(Rules::parse(spec.as_bytes()).rules)
}

fn at(zone: &Zone, sec: i64) -> String {
    zone.local_time(sec).map_or_else(|| "none".to_string(), |lt| show(&lt))
}

/// January and July 2024, one second either side of the US switches in 2024, 1938, 2100.
const INSTANTS: [i64; 8] = [
    1_705_300_000,
    1_720_000_000,
    1_710_053_999,
    1_710_054_000,
    1_730_613_599,
    1_730_613_600,
    -1_000_000_000,
    4_102_444_800,
];

#[test]
fn posix_strings_read_and_applied_as_glibc() {
    let table: &[(&str, [&str; 8])] = &[
        (
            "EST5EDT,M3.2.0,M11.1.0",
            [
                "2024-01-15 01:26:40 -18000 EST",
                "2024-07-03 05:46:40 -14400 EDT",
                "2024-03-10 01:59:59 -18000 EST",
                "2024-03-10 03:00:00 -14400 EDT",
                "2024-11-03 01:59:59 -14400 EDT",
                "2024-11-03 01:00:00 -18000 EST",
                "1938-04-24 17:13:20 -18000 EST",
                "2099-12-31 19:00:00 -18000 EST",
            ],
        ),
        (
            "EST5,M3.2.0,M11.1.0",
            [
                "2024-01-15 01:26:40 -18000 EST",
                "2024-07-03 09:46:40 +0 ",
                "2024-03-10 01:59:59 -18000 EST",
                "2024-03-10 07:00:00 +0 ",
                "2024-11-03 00:59:59 -18000 EST",
                "2024-11-03 01:00:00 -18000 EST",
                "1938-04-24 17:13:20 -18000 EST",
                "2099-12-31 19:00:00 -18000 EST",
            ],
        ),
        (
            "EST+-5",
            [
                "2024-01-14 06:26:40 -86400 EST",
                "2024-07-02 09:46:40 -86400 EST",
                "2024-03-09 06:59:59 -86400 EST",
                "2024-03-09 07:00:00 -86400 EST",
                "2024-11-02 05:59:59 -86400 EST",
                "2024-11-02 06:00:00 -86400 EST",
                "1938-04-23 22:13:20 -86400 EST",
                "2099-12-31 00:00:00 -86400 EST",
            ],
        ),
        (
            "EST+ 5",
            [
                "2024-01-15 01:26:40 -18000 EST",
                "2024-07-03 04:46:40 -18000 EST",
                "2024-03-10 01:59:59 -18000 EST",
                "2024-03-10 02:00:00 -18000 EST",
                "2024-11-03 00:59:59 -18000 EST",
                "2024-11-03 01:00:00 -18000 EST",
                "1938-04-24 17:13:20 -18000 EST",
                "2099-12-31 19:00:00 -18000 EST",
            ],
        ),
        (
            "EST65560",
            [
                "2024-01-14 06:26:40 -86400 EST",
                "2024-07-02 09:46:40 -86400 EST",
                "2024-03-09 06:59:59 -86400 EST",
                "2024-03-09 07:00:00 -86400 EST",
                "2024-11-02 05:59:59 -86400 EST",
                "2024-11-02 06:00:00 -86400 EST",
                "1938-04-23 22:13:20 -86400 EST",
                "2099-12-31 00:00:00 -86400 EST",
            ],
        ),
        (
            "<+0330>-3:30",
            [
                "2024-01-15 09:56:40 +12600 +0330",
                "2024-07-03 13:16:40 +12600 +0330",
                "2024-03-10 10:29:59 +12600 +0330",
                "2024-03-10 10:30:00 +12600 +0330",
                "2024-11-03 09:29:59 +12600 +0330",
                "2024-11-03 09:30:00 +12600 +0330",
                "1938-04-25 01:43:20 +12600 +0330",
                "2100-01-01 03:30:00 +12600 +0330",
            ],
        ),
        (
            "<-03>3<-02>,M3.5.0/-2,M10.5.0/-1",
            [
                "2024-01-15 03:26:40 -10800 -03",
                "2024-07-03 07:46:40 -7200 -02",
                "2024-03-10 03:59:59 -10800 -03",
                "2024-03-10 04:00:00 -10800 -03",
                "2024-11-03 02:59:59 -10800 -03",
                "2024-11-03 03:00:00 -10800 -03",
                "1938-04-24 19:13:20 -10800 -03",
                "2099-12-31 21:00:00 -10800 -03",
            ],
        ),
        (
            "AEST-10AEDT,M10.1.0,M4.1.0/3",
            [
                "2024-01-15 17:26:40 +39600 AEDT",
                "2024-07-03 19:46:40 +36000 AEST",
                "2024-03-10 17:59:59 +39600 AEDT",
                "2024-03-10 18:00:00 +39600 AEDT",
                "2024-11-03 16:59:59 +39600 AEDT",
                "2024-11-03 17:00:00 +39600 AEDT",
                "1938-04-25 09:13:20 +39600 AEDT",
                "2100-01-01 11:00:00 +39600 AEDT",
            ],
        ),
        (
            "EST5EDT,J60/0,J300",
            [
                "2024-01-15 01:26:40 -18000 EST",
                "2024-07-03 05:46:40 -14400 EDT",
                "2024-03-10 02:59:59 -14400 EDT",
                "2024-03-10 03:00:00 -14400 EDT",
                "2024-11-03 00:59:59 -18000 EST",
                "2024-11-03 01:00:00 -18000 EST",
                "1938-04-24 17:13:20 -18000 EST",
                "2099-12-31 19:00:00 -18000 EST",
            ],
        ),
        (
            "EST5EDT,59,300",
            [
                "2024-01-15 01:26:40 -18000 EST",
                "2024-07-03 05:46:40 -14400 EDT",
                "2024-03-10 02:59:59 -14400 EDT",
                "2024-03-10 03:00:00 -14400 EDT",
                "2024-11-03 00:59:59 -18000 EST",
                "2024-11-03 01:00:00 -18000 EST",
                "1938-04-24 17:13:20 -18000 EST",
                "2099-12-31 19:00:00 -18000 EST",
            ],
        ),
        (
            "EST5EDT,M3.2.0/x,M11.1.0",
            [
                "2024-01-15 01:26:40 -18000 EST",
                "2024-07-03 05:46:40 -14400 EDT",
                "2024-03-10 01:59:59 -18000 EST",
                "2024-03-10 03:00:00 -14400 EDT",
                "2024-11-03 01:59:59 -14400 EDT",
                "2024-11-03 02:00:00 -14400 EDT",
                "1938-04-24 18:13:20 -14400 EDT",
                "2099-12-31 20:00:00 -14400 EDT",
            ],
        ),
        (
            "EST5EDT,M3.5.0/26,M10.5.0/-1:30",
            [
                "2024-01-15 01:26:40 -18000 EST",
                "2024-07-03 05:46:40 -14400 EDT",
                "2024-03-10 01:59:59 -18000 EST",
                "2024-03-10 02:00:00 -18000 EST",
                "2024-11-03 00:59:59 -18000 EST",
                "2024-11-03 01:00:00 -18000 EST",
                "1938-04-24 17:13:20 -18000 EST",
                "2099-12-31 19:00:00 -18000 EST",
            ],
        ),
        (
            "Foo/Bar",
            [
                "2024-01-15 06:26:40 +0 Foo",
                "2024-07-03 09:46:40 +0 Foo",
                "2024-03-10 06:59:59 +0 Foo",
                "2024-03-10 07:00:00 +0 Foo",
                "2024-11-03 05:59:59 +0 Foo",
                "2024-11-03 06:00:00 +0 Foo",
                "1938-04-24 22:13:20 +0 Foo",
                "2100-01-01 00:00:00 +0 Foo",
            ],
        ),
        (
            "No/Such_Zone",
            [
                "2024-01-15 06:26:40 +0 ",
                "2024-07-03 09:46:40 +0 ",
                "2024-03-10 06:59:59 +0 ",
                "2024-03-10 07:00:00 +0 ",
                "2024-11-03 05:59:59 +0 ",
                "2024-11-03 06:00:00 +0 ",
                "1938-04-24 22:13:20 +0 ",
                "2100-01-01 00:00:00 +0 ",
            ],
        ),
        (
            "EST5EDT,M3.2.0,Mx",
            [
                "2024-01-15 01:26:40 -18000 EST",
                "2024-07-03 05:46:40 -14400 EDT",
                "2024-03-10 01:59:59 -18000 EST",
                "2024-03-10 03:00:00 -14400 EDT",
                "2024-11-03 01:59:59 -14400 EDT",
                "2024-11-03 02:00:00 -14400 EDT",
                "1938-04-24 18:13:20 -14400 EDT",
                "2099-12-31 20:00:00 -14400 EDT",
            ],
        ),
        (
            "XYZ-24:59:59",
            [
                "2024-01-16 07:26:39 +89999 XYZ",
                "2024-07-04 10:46:39 +89999 XYZ",
                "2024-03-11 07:59:58 +89999 XYZ",
                "2024-03-11 07:59:59 +89999 XYZ",
                "2024-11-04 06:59:58 +89999 XYZ",
                "2024-11-04 06:59:59 +89999 XYZ",
                "1938-04-25 23:13:19 +89999 XYZ",
                "2100-01-02 00:59:59 +89999 XYZ",
            ],
        ),
    ];
    for (spec, expected) in table {
        let zone = posix(spec);
        for (sec, want) in INSTANTS.iter().zip(expected) {
            assert_eq!(at(&zone, *sec), *want, "TZ={spec:?} at {sec}");
        }
    }
}

/// A zone file to build: transitions (time, type index), types (offset, is_dst, name),
/// leap seconds (time, total correction) and the footer (version 2 and later only).
struct Build<'a> {
    version: u8,
    transitions: &'a [(i64, u8)],
    types: &'a [(i32, bool, &'a str)],
    leaps: &'a [(i64, i32)],
    footer: &'a str,
}

impl Build<'_> {
    /// The file's bytes: a 32-bit part, then for version 2 and later a 64-bit part and
    /// the footer between newlines.
    fn bytes(&self) -> Vec<u8> {
        let mut out = self.part(4);
        if self.version != 0 {
            out.extend(self.part(8));
            out.extend(format!("\n{}\n", self.footer).bytes());
        }
        out
    }

    fn part(&self, width: usize) -> Vec<u8> {
        let mut names = Vec::new();
        let mut name_idx = Vec::new();
        for (_, _, name) in self.types {
            name_idx.push(names.len() as u8);
            names.extend(name.bytes().chain([0]));
        }
        let mut out = b"TZif".to_vec();
        out.push(if self.version == 0 { 0 } else { b'0' + self.version });
        out.extend([0; 15]);
        let counts = [0, 0, self.leaps.len(), self.transitions.len(), self.types.len(), names.len()];
        for n in counts {
            out.extend((n as u32).to_be_bytes());
        }
        let time = |t: i64| if width == 8 { t.to_be_bytes().to_vec() } else { (t as i32).to_be_bytes().to_vec() };
        self.transitions.iter().for_each(|&(t, _)| out.extend(time(t)));
        out.extend(self.transitions.iter().map(|&(_, i)| i));
        for (&(offset, dst, _), idx) in self.types.iter().zip(&name_idx) {
            out.extend(offset.to_be_bytes());
            out.extend([u8::from(dst), *idx]);
        }
        out.extend(&names);
        for &(t, corr) in self.leaps {
            out.extend(time(t));
            out.extend(corr.to_be_bytes());
        }
        out
    }
}

fn file(bytes: &[u8]) -> Option<Zone> {
    TzFile::parse(bytes, bytes.len() as u64).map(Zone::File)
}

/// A zone with a daylight type first, switching at 1,000,000 and 2,000,000, then the
/// footer's rules (which give away that they were used: other names and offsets).
const THREE_TYPES: &[(i32, bool, &str)] = &[(7200, true, "DDD"), (3600, false, "SSS"), (-1800, false, "HHH")];
const TWO_SWITCHES: &[(i64, u8)] = &[(1_000_000, 0), (2_000_000, 2)];

#[test]
fn zone_file_types_before_between_and_after_the_transitions() {
    let v2 = Build { version: 2, transitions: TWO_SWITCHES, types: THREE_TYPES, leaps: &[], footer: "FFF-5" };
    let zone = file(&v2.bytes()).expect("a valid version 2 file");
    // Before the first transition: the first standard type, not type 0.
    assert_eq!(at(&zone, 999_999), "1970-01-12 14:46:39 +3600 SSS");
    assert_eq!(at(&zone, 1_000_000), "1970-01-12 15:46:40 +7200 DDD");
    assert_eq!(at(&zone, 1_999_999), "1970-01-24 05:33:19 +7200 DDD");
    // From the last transition on, the footer.
    assert_eq!(at(&zone, 2_000_000), "1970-01-24 08:33:20 +18000 FFF");
    // Version 3 and 4 read the same; version 1 has no footer: the last type stays.
    let v4 = Build { version: 4, ..v2 };
    assert_eq!(at(&file(&v4.bytes()).unwrap(), 2_000_000), "1970-01-24 08:33:20 +18000 FFF");
    let v1 = Build { version: 0, ..v2 };
    assert_eq!(at(&file(&v1.bytes()).unwrap(), 2_000_000), "1970-01-24 03:03:20 -1800 HHH");
    // A version 2 file with an empty footer keeps the last type too.
    let empty_footer = Build { footer: "", ..v2 };
    assert_eq!(at(&file(&empty_footer.bytes()).unwrap(), 3_000_000), "1970-02-04 16:50:00 -1800 HHH");
    // All types daylight: before the first transition, type 0.
    let all_dst = Build { types: &[(7200, true, "DDD"), (10800, true, "EEE")], transitions: &[(1_000_000, 1)], ..v2 };
    assert_eq!(at(&file(&all_dst.bytes()).unwrap(), 0), "1970-01-01 02:00:00 +7200 DDD");
}

#[test]
fn zone_file_leap_seconds_show_as_second_60() {
    // One leap second at the end of 1970-01-01: the clock's 86,400th second is 23:59:60,
    // and the correction is 1 from then on.
    let leaps = Build { version: 2, transitions: &[], types: &[(0, false, "UTC")], leaps: &[(86_400, 1)], footer: "" };
    let zone = file(&leaps.bytes()).unwrap();
    assert_eq!(at(&zone, 86_399), "1970-01-01 23:59:59 +0 UTC");
    assert_eq!(at(&zone, 86_400), "1970-01-01 23:59:60 +0 UTC");
    assert_eq!(at(&zone, 86_401), "1970-01-02 00:00:00 +0 UTC");
}

#[test]
fn zone_files_glibc_refuses() {
    let good = Build { version: 2, transitions: TWO_SWITCHES, types: THREE_TYPES, leaps: &[], footer: "FFF-5" }.bytes();
    assert!(file(&good).is_some());
    let mut bad_magic = good.clone();
    bad_magic[0] = b'X';
    assert!(file(&bad_magic).is_none());
    // The 64-bit part's first type (after two 8-byte times, two indices): is_dst 2.
    let v1_len =
        Build { version: 0, transitions: TWO_SWITCHES, types: THREE_TYPES, leaps: &[], footer: "" }.bytes().len();
    let mut dst_two = good.clone();
    dst_two[v1_len + 44 + 18 + 4] = 2;
    assert!(file(&dst_two).is_none());
    // A name index past the names.
    let mut name_past = good.clone();
    name_past[v1_len + 44 + 18 + 5] = 100;
    assert!(file(&name_past).is_none());
    // A transition to a type that does not exist.
    let mut no_type = good.clone();
    no_type[v1_len + 44 + 16] = 3;
    assert!(file(&no_type).is_none());
    // A version 2 file cut before its footer, or with only the first newline.
    let cut = good.len() - "\nFFF-5\n".len();
    assert!(file(&good[..cut]).is_none());
    assert!(file(&good[..cut + 1]).is_none());
    // Cut inside the data.
    assert!(file(&good[..60]).is_none());
    // A footer without its leading newline is dropped, not the file.
    let mut no_newline = good.clone();
    no_newline[cut] = b'x';
    assert_eq!(at(&file(&no_newline).unwrap(), 3_000_000), "1970-02-04 16:50:00 -1800 HHH");
}

/// `Zone::resolve` over an in-memory file system.
fn resolve(tz: Option<&str>, tzdir: Option<&str>, files: &HashMap<&str, Vec<u8>>) -> Zone {
    let mut read = |path: &[u8]| {
        let bytes = files.get(std::str::from_utf8(path).ok()?)?.clone();
        let size_bytes = bytes.len() as u64;
        Some(ZoneFile { bytes, size_bytes })
    };
    Zone::resolve(tz.map(str::as_bytes), tzdir.map(str::as_bytes), false, &mut read)
}

#[test]
fn tz_values_resolved_as_glibc_tzset() {
    let named = |name: &str, offset: i32| {
        Build { version: 2, transitions: &[], types: &[(offset, false, name)], leaps: &[], footer: "" }.bytes()
    };
    let files: HashMap<&str, Vec<u8>> = [
        ("/etc/localtime", named("LOC", 3600)),
        ("/usr/share/zoneinfo/Universal", named("UNI", 0)),
        ("/usr/share/zoneinfo/EST5EDT", named("FIL", -18000)),
        ("/zones/EST5EDT", named("DIR", -3600)),
        ("/abs/zone", named("ABS", 7200)),
    ]
    .into_iter()
    .collect();
    let name_at_0 = |tz: Option<&str>, tzdir: Option<&str>| at(&resolve(tz, tzdir, &files), 0);
    assert_eq!(name_at_0(None, None), "1970-01-01 01:00:00 +3600 LOC");
    assert_eq!(name_at_0(Some(""), None), "1970-01-01 00:00:00 +0 UNI");
    // A zone file of the string's name wins over the string; TZDIR moves the lookup.
    assert_eq!(name_at_0(Some("EST5EDT"), None), "1969-12-31 19:00:00 -18000 FIL");
    assert_eq!(name_at_0(Some(":EST5EDT"), None), "1969-12-31 19:00:00 -18000 FIL");
    assert_eq!(name_at_0(Some("EST5EDT"), Some("/zones")), "1969-12-31 23:00:00 -3600 DIR");
    assert_eq!(name_at_0(Some("EST5EDT"), Some("")), "1969-12-31 19:00:00 -18000 FIL");
    assert_eq!(name_at_0(Some("/abs/zone"), Some("/zones")), "1970-01-01 02:00:00 +7200 ABS");
    // No file: `:` alone is UTC by name, `::` an unnamed UTC, a missing /etc/localtime UTC.
    let none = HashMap::new();
    assert_eq!(at(&resolve(Some(":"), None, &files), 0), "1970-01-01 00:00:00 +0 UTC");
    assert_eq!(at(&resolve(Some("::"), None, &files), 0), "1970-01-01 00:00:00 +0 ");
    assert_eq!(at(&resolve(None, None, &none), 0), "1970-01-01 00:00:00 +0 UTC");
    assert_eq!(at(&resolve(Some(":/etc/localtime"), None, &none), 0), "1970-01-01 00:00:00 +0 UTC");
    // A missing EST5EDT without posixrules: the US rules with the string's offsets.
    let est = resolve(Some("EST5EDT"), None, &none);
    assert_eq!(at(&est, 1_705_300_000), "2024-01-15 01:26:40 -18000 EST");
    assert_eq!(at(&est, 1_720_000_000), "2024-07-03 05:46:40 -14400 EDT");
}

#[test]
fn a_ruleless_string_takes_posixrules_transitions_with_its_own_names() {
    // posixrules: standard -5 h, daylight -4 h from 1,000,000 to 2,000,000 (wall-clock
    // transitions), standard again at 3,000,000, then a footer that stays on -5 h.
    let rules = Build {
        version: 2,
        transitions: &[(1_000_000, 1), (2_000_000, 0), (3_000_000, 0)],
        types: &[(-18000, false, "EST"), (-14400, true, "EDT")],
        leaps: &[],
        footer: "EST5",
    };
    let files: HashMap<&str, Vec<u8>> = [("/usr/share/zoneinfo/posixrules", rules.bytes())].into_iter().collect();
    let zone = resolve(Some("AAA3BBB"), None, &files);
    // Into daylight time: moved by the standard offsets' difference (+2 h), as glibc.
    assert_eq!(at(&zone, 1_007_199), "1970-01-12 12:46:39 -10800 AAA");
    assert_eq!(at(&zone, 1_007_200), "1970-01-12 13:46:40 -7200 BBB");
    // Out of it: moved by the whole daylight offset (glibc 2.36 reads the file's daylight
    // offset as 0 on a first load).
    assert_eq!(at(&zone, 1_992_799), "1970-01-23 23:33:19 -7200 BBB");
    assert_eq!(at(&zone, 1_992_800), "1970-01-23 22:33:20 -10800 AAA");
    // Past the last transition (moved by +2 h too), the file's footer and its names.
    assert_eq!(at(&zone, 3_007_199), "1970-02-04 16:19:59 -10800 AAA");
    assert_eq!(at(&zone, 3_007_200), "1970-02-04 14:20:00 -18000 EST");
    // Loaded again in the same process, the switch out of daylight time stays where the
    // file has it (GNU du's `%s` loads again; `du_compat` checks it against GNU du).
    let mut read = |path: &[u8]| {
        let bytes = files.get(std::str::from_utf8(path).ok()?)?.clone();
        Some(ZoneFile { size_bytes: bytes.len() as u64, bytes })
    };
    let again = Zone::resolve(Some(b"AAA3BBB"), None, true, &mut read);
    assert_eq!(at(&again, 1_007_200), "1970-01-12 13:46:40 -7200 BBB");
    assert_eq!(at(&again, 1_999_999), "1970-01-24 01:33:19 -7200 BBB");
    assert_eq!(at(&again, 2_000_000), "1970-01-24 00:33:20 -10800 AAA");
}

#[test]
fn years_beyond_cs_tm_year_are_out_of_range() {
    let utc = Zone::Rules(Rules::utc());
    assert_eq!(at(&utc, i64::MAX), "none");
    assert_eq!(at(&utc, i64::MIN), "none");
    // The last second whose year (2147485547) fits tm_year, and the next.
    assert_eq!(at(&utc, 67_768_036_191_676_799), "2147485547-12-31 23:59:59 +0 UTC");
    assert_eq!(at(&utc, 67_768_036_191_676_800), "none");
    // An offset can carry a time across the edge.
    assert_eq!(at(&posix("AAA-1"), 67_768_036_191_676_799), "none");
}

#[test]
fn glibcs_transition_search_agrees_with_a_binary_search_on_ordered_files() {
    // Half-yearly switches (glibc's guess lands near), then sparse ones (it does not).
    for (n, step) in
        [(2, 1_000), (11, 15_778_476), (12, 15_778_476), (40, 15_778_476), (300, 15_778_000), (25, 400_000_000)]
    {
        let transitions: Vec<i64> = (0..n).map(|i| -500_000_000 + i * step).collect();
        let last = transitions[transitions.len() - 1];
        let mut sec = transitions[0];
        while sec < last {
            let want = transitions.partition_point(|&t| t <= sec);
            assert_eq!(tzif::transition_after(&transitions, sec), want, "{n} transitions {step} s apart, at {sec}");
            sec += step / 3 + 1;
        }
    }
}
