//! Unit tests of the ncdu reader and writer: round trips through dfdu and through Debian's
//! `ncdu` (the reference), the formats of other writers, every malformed-input error, the
//! staging memory bound, and a corruption fuzz loop.

use super::import::{ImportError, STAGED_BYTES};
use super::*;
use crate::meta::Kind;
use crate::platform::Follow;
use crate::tree::arena::{self, Arena};

/// A small but complete export: nesting, a hard link, an error, exclusions,
/// escapes, raw non-UTF-8 bytes and unknown keys.
fn sample() -> Vec<u8> {
    let mut v = b"[1,2,{\"progname\":\"ncdu\",\"progver\":\"1.18\",\"timestamp\":1700000000},\n[{\"name\":\"/srv\",\"asize\":4096,\"dsize\":4096,\"dev\":2049},\n{\"name\":\"a.txt\",\"asize\":12,\"dsize\":4096},\n[{\"name\":\"sub\",\"asize\":4096,\"dsize\":4096,\"mtime\":1.5,\"extra\":[1,{\"x\":null}]},\n{\"name\":\"link1\",\"asize\":5,\"dsize\":4096,\"ino\":1234,\"hlnkc\":true,\"nlink\":2},\n{\"name\":\"sym\",\"asize\":7,\"notreg\":true}],\n{\"name\":\"link2\",\"asize\":5,\"dsize\":4096,\"ino\":1234,\"hlnkc\":true,\"nlink\":2},\n[{\"name\":\"proc\",\"excluded\":\"otherfs\"}],\n{\"name\":\"q\\\"\\\\\\n\\u00e9\\ud83d\\ude00\",\"asize\":1},\n{\"name\":\"raw".to_vec();
    v.extend_from_slice(b"\xff\xfe");
    v.extend_from_slice(b"\",\"asize\":2},\n{\"name\":\"secret\",\"read_error\":true},\n{\"name\":\"skip\",\"excluded\":\"pattern\"}]]\n");
    v
}

fn load(bytes: &[u8]) -> Result<(Arena, Imported), ImportError> {
    let a = Arena::new();
    let r = import(bytes, &a)?;
    Ok((a, r))
}

fn export_bytes(a: &Arena, root: u32) -> Vec<u8> {
    let mut out = Vec::new();
    export(a, root, 42, &mut out).unwrap();
    out
}

#[test]
fn sample_imports_with_links_counted_once() {
    let (a, r) = load(&sample()).unwrap();
    assert_eq!(r.progname, "ncdu");
    assert_eq!(a.dir_name(r.root), b"/srv");
    let (disk, apparent, items) = a.dir_totals(r.root);
    // root 4096 + a.txt 4096 + sub 4096 + link (once) 4096.
    assert_eq!(disk, 4 * 4096);
    assert_eq!(apparent, 4096 + 12 + 4096 + 5 + 7 + 1 + 2);
    assert_eq!(items, 10);
}

/// Issue 10, item 5: importing a valid 65,534-level export took 106 s (each closed
/// directory added its sizes to every ancestor). A 20,000-level one is imported here;
/// the arena records visited while moving totals must grow linearly, and the totals
/// must be exact.
#[test]
fn deep_import_moves_totals_in_linear_work() {
    const LEVELS: usize = 20_000;
    let mut v = b"[1,2,{},\n[{\"name\":\"/r\",\"asize\":10,\"dsize\":512}".to_vec();
    for _ in 1..LEVELS {
        v.extend_from_slice(b",\n[{\"name\":\"d\",\"asize\":10,\"dsize\":512},{\"name\":\"f\",\"asize\":3}");
    }
    v.extend(std::iter::repeat_n(b']', LEVELS));
    v.extend_from_slice(b"]\n");
    let (a, r) = load(&v).unwrap();
    let n = LEVELS as u64;
    assert_eq!(a.dir_totals(r.root), (512 * n, 10 * n + 3 * (n - 1), 2 * (n - 1)));
    let steps = a.steps.load(std::sync::atomic::Ordering::Relaxed);
    assert!(steps <= 3 * n, "{steps} steps for {n} directories: not linear");
}

#[test]
fn export_import_export_is_identical() {
    let (a, r) = load(&sample()).unwrap();
    let once = export_bytes(&a, r.root);
    let (b, r2) = load(&once).unwrap();
    let twice = export_bytes(&b, r2.root);
    assert_eq!(String::from_utf8_lossy(&once), String::from_utf8_lossy(&twice));
    assert!(once.windows(2).any(|w| w == b"\xff\xfe"), "raw bytes survive");
}

#[test]
fn gdu_cumulative_directory_sizes_are_not_counted_twice() {
    let gdu = b"[1,2,{\"progname\":\"gdu\",\"progver\":\"5.30\",\"timestamp\":1},\n[{\"name\":\"/t\",\"asize\":4096+0,\"dsize\":12288,\"items\":3}]]";
    assert!(load(gdu).is_err(), "not JSON");
    let gdu = b"[1,2,{\"progname\":\"gdu\"},[{\"name\":\"/t\",\"asize\":4106,\"dsize\":12288,\"items\":3},[{\"name\":\"d\",\"asize\":4106,\"dsize\":8192,\"items\":1},{\"name\":\"f\",\"asize\":10,\"dsize\":4096}]]]";
    let (a, r) = load(gdu).unwrap();
    assert_eq!(a.dir_totals(r.root).0, 12288);
    assert_eq!(a.dir_totals(r.root).1, 4106);
}

/// gdu 5 writes the first name of a hard-linked file it met as a plain file and marks the
/// later names (`ino`, `hlnkc`): each marked name is counted already, whichever directory
/// comes first in the file.
#[test]
fn gdu_marked_link_names_are_counted_already() {
    let gdu = b"[1,2,{\"progname\":\"gdu\"},[{\"name\":\"/t\"},[{\"name\":\"a\"},{\"name\":\"f\",\"asize\":10,\"dsize\":4096,\"ino\":7,\"hlnkc\":true},{\"name\":\"h\",\"asize\":10,\"dsize\":4096,\"ino\":7,\"hlnkc\":true}],[{\"name\":\"b\"},{\"name\":\"g\",\"asize\":10,\"dsize\":4096}]]]";
    let (a, r) = load(gdu).unwrap();
    assert_eq!(a.dir_totals(r.root).0, 4096);
    // ncdu's own export counts one of two marked names (they are all it has).
    let ncdu = String::from_utf8_lossy(gdu).replace("gdu", "ncdu");
    let (a, r) = load(ncdu.as_bytes()).unwrap();
    assert_eq!(a.dir_totals(r.root).0, 2 * 4096);
}

#[test]
fn bad_input_gets_an_error_with_its_offset() {
    let cases: &[(&[u8], &str)] = &[
        (b"", "unexpected end"),
        (b"{}", "expected '['"),
        (b"[2,0,{},[{\"name\":\"/\"}]]", "unsupported format version 2"),
        // Issue 25: an older major version is as unknown as a newer one.
        (b"[0,2,{},[{\"name\":\"/\"}]]", "unsupported format version 0"),
        (b"[1,0,{},[{\"name\":\"/\",\"asize\":-1}]]", "unsigned"),
        (b"[1,0,{},[{\"name\":\"/\",\"asize\":1.5}]]", "integer"),
        (b"[1,0,{},[{\"name\":\"/\",\"asize\":99999999999999999999999}]]", "out of range"),
        (b"[1,0,{},[{\"name\":\"/\",\"dsize\":2000000000000000000}]]", "size out of range"),
        (b"[1,0,{},[{\"asize\":1}]]", "without a name"),
        (b"[1,0,{},[{\"name\":\"/\",\"name\":\"x\"}]]", "duplicate name"),
        (b"[1,0,{},[{\"name\":\"/\"},[{\"name\":\"x\",\"excluded\":\"otherfs\"},{}]]]", "excluded directory"),
        (b"[1,0,{},[{\"name\":\"/\"}]] x", "trailing data"),
        (b"[1,0,{},[{\"name\":\"/\"},{\"name\":\"a\\q\"}]]", "invalid escape"),
        (b"[1,0,{},[{\"name\":\"/\"}", "unexpected end"),
        (b"[1,10001,{},[{\"name\":\"/\"}]]", "invalid minor version"),
        (b"[1,0,{},[{\"name\":\"/\"},{\"name\":\"l\",\"nlink\":4294967296}]]", "integer out of range"),
        (b"[1,0,{},[{\"name\":\"/\",\"x\":tru}]]", "invalid literal"),
        // JSON has no raw control characters in strings; ncdu 1.18 stops there too
        // ("Invalid character").
        (b"[1,0,{},[{\"name\":\"/\"},{\"name\":\"a\tb\"}]]", "control character"),
        (b"[1,0,{},[{\"name\":\"/\"},{\"name\":\"a\x01b\"}]]", "control character"),
        (b"[1,0,{},[{\"name\":\"/\",\"x\":[1}}]]", "expected ',' or a closing bracket"),
        (b"[1,0,{},[{\"name\":\"/\",\"x\":{\"a\":1]}]]", "expected ',' or a closing bracket"),
    ];
    for (input, want) in cases {
        let err = load(input).err().unwrap_or_else(|| panic!("accepted {:?}", String::from_utf8_lossy(input)));
        assert!(err.msg.contains(want), "{:?}: got {err}", String::from_utf8_lossy(input));
        assert!(err.offset <= input.len() as u64);
    }
    // "expected" errors point at the byte that was not the one expected.
    for (input, bad) in [(&b"{}"[..], b'{'), (b"[1 0", b'0'), (b"[1,0,{} [", b'[')] {
        let err = load(input).err().unwrap();
        let at = input.iter().rposition(|&b| b == bad).unwrap();
        assert_eq!(err.offset, at as u64, "{:?}: {err}", String::from_utf8_lossy(input));
    }
}

#[test]
fn nesting_deeper_than_any_real_tree_is_refused_without_recursion() {
    let mut v = b"[1,0,{},[{\"name\":\"/\"}".to_vec();
    for _ in 0..MAX_DEPTH + 10 {
        v.extend_from_slice(b",[{\"name\":\"d\"}");
    }
    let err = load(&v).err().expect("too deep");
    assert!(err.msg.contains("nested too deeply"), "{err}");
    let mut v = b"[1,0,{\"x\":".to_vec();
    v.extend(std::iter::repeat_n(b'[', 100_000));
    assert!(load(&v).err().expect("deep unknown value").msg.contains("nested too deeply"));
    // Unknown values inside an entry: 64 levels of arrays are read past, 65 are refused.
    let unknown =
        |levels: usize| format!("[1,0,{{}},[{{\"name\":\"/\",\"x\":{}{}}}]]", "[".repeat(levels), "]".repeat(levels));
    assert!(load(unknown(64).as_bytes()).is_ok());
    assert!(load(unknown(65).as_bytes()).err().expect("65 levels").msg.contains("nested too deeply"));
}

/// Debian's ncdu reading `input` (`-f -`) and writing it back (`-o -`); everything after
/// the header line, without trailing newlines. None (with a SKIP line) without ncdu,
/// unless DFDU_REQUIRE_NCDU=1 says it must be there.
fn through_ncdu(input: &[u8]) -> Option<Vec<u8>> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let child = Command::new("ncdu").args(["-f", "-", "-o", "-"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn();
    let Ok(mut child) = child else {
        assert!(std::env::var_os("DFDU_REQUIRE_NCDU").is_none(), "ncdu is required but not installed");
        eprintln!("SKIP: ncdu is not installed (apt-get install ncdu)");
        return None;
    };
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "ncdu refused {:?}", String::from_utf8_lossy(input));
    Some(body(&out.stdout))
}

fn body(export: &[u8]) -> Vec<u8> {
    let start = export.iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut b = export[start..].to_vec();
    while b.last() == Some(&b'\n') {
        b.pop();
    }
    b
}

/// Our export of the sample, read and rewritten by ncdu, comes back byte for byte:
/// field names, which fields are left out, escapes, links, errors and exclusions are
/// written the way ncdu writes them.
#[test]
fn ncdu_rewrites_our_export_unchanged() {
    let (a, r) = load(&sample()).unwrap();
    let ours = export_bytes(&a, r.root);
    if let Some(back) = through_ncdu(&ours) {
        // ncdu 1.x names another file system "othfs"; ncdu 2 and we write "otherfs".
        let back = String::from_utf8_lossy(&back).replace("\"othfs\"", "\"otherfs\"");
        assert_eq!(back, String::from_utf8_lossy(&body(&ours)));
    }
}

/// Names that need every kind of escape, and escapes of every kind in the input: what
/// we read and write again is what ncdu reads and writes again.
#[test]
fn names_and_escapes_read_and_written_as_ncdu_does() {
    let mut names: Vec<String> = (1u8..0x20).chain([0x7f, b'"', b'\\', b'/']).map(|b| format!("\\u{b:04x}")).collect();
    // Not surrogate pairs: ncdu 1.x encodes each half on its own (see the next test).
    names.extend(
        ["\\n\\r\\t\\b\\f\\/\\\"\\\\x", "\\u00e9\\u07ff\\u0800\\uffff\\u0080", "\\u0041\\u00C9\\u00Ff"]
            .map(String::from),
    );
    names.push("plain \u{e9}".into());
    let mut doc =
        String::from("[1,2,{\"progname\":\"test\"},\n[{\"name\":\"/r\",\"asize\":10,\"dsize\":4096,\"dev\":7}");
    for (i, n) in names.iter().enumerate() {
        doc.push_str(&format!(",\n{{\"name\":\"{n}\",\"asize\":{i},\"dsize\":{}}}", i * 512));
    }
    // A directory that could not be read, a file that could not be stat'ed, nested
    // directories with hard links between them, an excluded entry, another file system.
    doc.push_str(",\n[{\"name\":\"locked\",\"asize\":4096,\"dsize\":4096,\"read_error\":true}],\n{\"name\":\"gone\",\"read_error\":true}");
    doc.push_str(",\n{\"name\":\"one-link\",\"asize\":2,\"ino\":99,\"nlink\":1}");
    // `false` where a flag is expected: as if it were absent.
    doc.push_str(",\n{\"name\":\"all-false\",\"asize\":4,\"notreg\":false,\"read_error\":false,\"hlnkc\":false}");
    doc.push_str(",\n{\"name\":\"unknown-keys\",\"asize\":1,\"x1\":true,\"x2\":false,\"x3\":null,\"x4\":-1.5e3,\"x5\":\"s\",\"x6\":{\"a\":[1,{}]}}");
    doc.push_str(",\n[{\"name\":\"d1\",\"asize\":4096,\"dsize\":4096},\n{\"name\":\"l1\",\"asize\":9,\"dsize\":4096,\"ino\":77,\"hlnkc\":true,\"nlink\":3},\n[{\"name\":\"d2\",\"asize\":4096,\"dsize\":4096,\"dev\":9},\n{\"name\":\"l2\",\"asize\":9,\"dsize\":4096,\"ino\":77,\"hlnkc\":true,\"nlink\":3}],\n{\"name\":\"after\",\"asize\":3,\"dsize\":512}]");
    // Not `[{"name":..,"excluded":"pattern"}]`: we write that directory back as a plain
    // entry (as ncdu 2 writes its own exclusions); ncdu 1.18 keeps the brackets.
    doc.push_str(
        ",\n{\"name\":\"skipped-file\",\"excluded\":\"pattern\"},\n[{\"name\":\"mnt\",\"excluded\":\"otherfs\"}]]]\n",
    );
    let (a, r) = load(doc.as_bytes()).unwrap();
    let ours = body(&export_bytes(&a, r.root));
    if let Some(theirs) = through_ncdu(doc.as_bytes()) {
        let theirs = String::from_utf8_lossy(&theirs).replace("\"othfs\"", "\"otherfs\"").into_bytes();
        assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&theirs));
        assert_eq!(ours, theirs, "raw bytes");
    }
}

/// `\\u` escapes decode as the JSON and UTF-16 rules say (std's decoder is the
/// reference): surrogate pairs make one code point, a lone surrogate is kept as WTF-8.
#[test]
fn unicode_escapes_decode_like_utf16() {
    let units: [&[u16]; 6] = [
        &[0x7f, 0x80, 0x7ff, 0x800],
        &[0xffff, 0xe000],
        &[0xd83d, 0xde00],
        &[0xd800, 0xdc00],
        &[0xdbff, 0xdfff, 0x41],
        &[0x10, 0xfeff],
    ];
    for u in units {
        let escaped: String = u.iter().map(|c| format!("\\u{c:04X}")).collect();
        let doc = format!("[1,0,{{}},[{{\"name\":\"/\"}},{{\"name\":\"{escaped}\"}}]]");
        let (a, r) = load(doc.as_bytes()).unwrap();
        let mut name = Vec::new();
        a.child_name(r.root, a.children(r.root).unwrap().start, &mut name);
        assert_eq!(name, String::from_utf16(u).unwrap().into_bytes(), "{escaped}");
    }
    // A high surrogate followed by something else: each is kept on its own.
    let (a, r) = load(b"[1,0,{},[{\"name\":\"/\"},{\"name\":\"\\ud800\\u0041\\udc00\"}]]").unwrap();
    let mut name = Vec::new();
    a.child_name(r.root, a.children(r.root).unwrap().start, &mut name);
    assert_eq!(name, b"\xed\xa0\x80A\xed\xb0\x80", "WTF-8 of U+D800, A, U+DC00");
    // Any other code point followed by an escape: the escape is not taken as its pair.
    let (a, r) = load(b"[1,0,{},[{\"name\":\"/\"},{\"name\":\"\\u00e9\\n\\u0041\\udc00\"}]]").unwrap();
    let mut name = Vec::new();
    a.child_name(r.root, a.children(r.root).unwrap().start, &mut name);
    assert_eq!(name, b"\xc3\xa9\nA\xed\xb0\x80", "U+00E9, newline, A, WTF-8 of U+DC00");
}

/// Names up to the 32 KiB limit are read whole; one byte more is refused.
#[test]
fn names_up_to_32_kib_are_read_and_longer_ones_refused() {
    let doc = |len: usize| format!("[1,0,{{}},[{{\"name\":\"/\"}},{{\"name\":\"{}\"}}]]", "n".repeat(len));
    let (a, r) = load(doc(32 * 1024).as_bytes()).unwrap();
    let mut name = Vec::new();
    a.child_name(r.root, a.children(r.root).unwrap().start, &mut name);
    assert_eq!(name.len(), 32 * 1024);
    let err = load(doc(32 * 1024 + 1).as_bytes()).err().expect("a name over 32 KiB");
    assert!(err.msg.contains("longer than 32 KiB"), "{err}");
}

/// ncdu 1.x marks hard links with `hlnkc` alone (no `nlink`): names of one inode are
/// still counted once.
#[test]
fn hlnkc_without_nlink_counts_a_link_once() {
    let doc = b"[1,0,{},[{\"name\":\"/\",\"dsize\":4096},{\"name\":\"a\",\"dsize\":8192,\"ino\":5,\"hlnkc\":true},{\"name\":\"b\",\"dsize\":8192,\"ino\":5,\"hlnkc\":true}]]";
    let (a, r) = load(doc).unwrap();
    assert_eq!(a.dir_totals(r.root).0, 4096 + 8192);
    // `hlnkc` means "more than one link": what we write back says at least 2.
    let out = String::from_utf8(export_bytes(&a, r.root)).unwrap();
    let nlinks: Vec<u64> =
        out.split("\"nlink\":").skip(1).map(|t| t.split(['}', ',']).next().unwrap().parse().unwrap()).collect();
    assert!(nlinks.len() == 2 && nlinks.iter().all(|&n| n >= 2), "{out}");
}

/// An entry that could not be read marks every directory above it (the browser's
/// "error below" mark, as ncdu shows it), and no directory beside it.
#[test]
fn errors_mark_every_directory_above() {
    let doc = b"[1,0,{},[{\"name\":\"/\"},[{\"name\":\"a\"},[{\"name\":\"b\"},{\"name\":\"bad\",\"read_error\":true}]],[{\"name\":\"clean\"}]]]";
    let (a, r) = load(doc).unwrap();
    let sub = |dir: u32, k: u32| a.dir_of(a.children(dir).unwrap().start + k);
    let (d_a, d_clean) = (sub(r.root, 0), sub(r.root, 1));
    let d_b = sub(d_a, 0);
    for d in [r.root, d_a, d_b] {
        assert!(a.dir_flags(d).error_below(), "dir {d}");
    }
    assert!(!a.dir_flags(d_clean).error_below());
}

/// A deterministic generator (xorshift) so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut v = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        const TOKENS: &[&[u8]] = &[
            b"[",
            b"]",
            b"{",
            b"}",
            b",",
            b":",
            b"\"",
            b"\\",
            b"\\u",
            b"-",
            b"1e9",
            b"99999999999999999999",
            b"\xff",
            b"\0",
            b"null",
            b"{\"name\":\"x\"}",
            b"[{\"name\":\"d\"}",
        ];
        match rng.below(6) {
            0 => v.truncate(at),
            1 => {
                if at < v.len() {
                    v[at] = rng.next() as u8;
                }
            }
            2 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                v.splice(at..at, t.iter().copied());
            }
            3 => {
                let end = (at + rng.below(40)).min(v.len());
                v.drain(at..end);
            }
            4 => {
                let end = (at + rng.below(200)).min(v.len());
                let piece = v[at..end].to_vec();
                v.splice(at..at, piece);
            }
            _ => {
                if at < v.len() {
                    v[at] = b"[]{},:\"0"[rng.below(8)];
                }
            }
        }
    }
    v
}

/// Ten thousand damaged inputs: every one is either read or refused with an
/// error, never a panic, and what is read stays proportional to the input.
#[test]
fn survives_ten_thousand_corrupted_inputs() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let base = sample();
    let (big_arena, big) = load(&base).unwrap();
    let bigger = export_bytes(&big_arena, big.root);
    let mut accepted = 0;
    // DFDU_FUZZ_ITERS=1000000 for a longer hunt; crashers go to tests/corpus/ncdu.
    let iters: usize = std::env::var("DFDU_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    for i in 0..iters {
        let input = mutate(&mut rng, if i % 2 == 0 { &base } else { &bigger });
        let a = Arena::new();
        match import(&input[..], &a) {
            Ok(_) => {
                accepted += 1;
                assert!(a.entry_count() as usize <= input.len(), "entries beyond what the input can hold");
            }
            Err(e) => assert!(e.offset <= input.len() as u64 + 1, "offset {} past the end", e.offset),
        }
    }
    assert!(accepted > 0 && accepted < iters, "the mutations must produce both kinds: {accepted}");
}

/// Inputs that once broke the reader (tests/corpus/ncdu), kept as regressions.
#[test]
fn corpus_of_past_failures() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/ncdu");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let input = std::fs::read(entry.unwrap().path()).unwrap();
        let _ = load_any(&input);
        n += 1;
    }
    assert!(n > 0, "the corpus is empty");
}

/// Issue 10.11: an import into an arena that runs out of ids is an error that says so.
#[test]
fn an_import_that_fills_the_arena_fails_with_a_message() {
    let json = br#"[1,2,{"progname":"t"},[{"name":"/r"},{"name":"a"},{"name":"b"},[{"name":"c"},{"name":"d"}]]]"#;
    let a = Arena::new();
    a.leave_ids(2);
    let e = import(&json[..], &a).err().expect("the arena is full");
    assert!(e.msg.contains("too many entries"), "{}", e.msg);
    assert!(import(&json[..], &Arena::new()).is_ok());
}

/// Issue 10, item 7: the importer held about 64 bytes per child (plus its name) until
/// the folder closed. Counts the bytes its staging holds at most while importing one
/// folder of 100,000 entries, and bounds them per entry.
#[test]
fn one_huge_folder_stages_few_bytes_per_entry() {
    let n = 100_000u64;
    let mut json = String::from("[1,2,{\"progname\":\"x\",\"progver\":\"1\",\"timestamp\":1},[{\"name\":\"/r\"}");
    for i in 0..n {
        json.push_str(&format!(",{{\"name\":\"file-{i:06}\",\"asize\":{},\"dsize\":{}}}", i * 7, i * 4096));
    }
    json.push_str(",{\"name\":\"linked\",\"asize\":1,\"dsize\":512,\"ino\":9,\"nlink\":2,\"hlnkc\":true}");
    json.push_str("]]\n");
    STAGED_BYTES.with(|c| c.set((0, 0)));
    let a = Arena::new();
    let root = import(json.as_bytes(), &a).expect("imports").root;
    let (now, peak) = STAGED_BYTES.with(|c| c.get());
    assert_eq!(now, 0, "staging is given back when the folder closes");
    let per_entry = peak.saturating_sub(1 << 16) as f64 / n as f64;
    assert!(per_entry <= 32.0, "staging held {peak} bytes at most: {per_entry:.1} per entry");
    // And it all arrived.
    assert_eq!(a.dir_totals(root).2, n + 1);
    let kids = a.children(root).unwrap();
    let mut name = Vec::new();
    a.child_name(root, kids.start + 12_345, &mut name);
    assert_eq!(name, b"file-012345");
    assert_eq!(a.own_sizes(kids.start + 12_345), (12_345 * 4096, 12_345 * 7));
    assert!(a.link_of(kids.end - 1).is_some());
}

/// `ncdu -o -` of `dir` (with `--exclude` for each pattern), everything after the header
/// line. None (with a SKIP line) without ncdu, unless DFDU_REQUIRE_NCDU=1.
fn ncdu_scan(dir: &std::path::Path, excludes: &[&str]) -> Option<Vec<u8>> {
    let mut cmd = std::process::Command::new("ncdu");
    for x in excludes {
        cmd.args(["--exclude", x]);
    }
    let Ok(out) = cmd.arg("-o").arg("-").arg(dir).output() else {
        assert!(std::env::var_os("DFDU_REQUIRE_NCDU").is_none(), "ncdu is required but not installed");
        eprintln!("SKIP: ncdu is not installed (apt-get install ncdu)");
        return None;
    };
    assert!(out.status.success(), "ncdu -o - {dir:?}: {}", String::from_utf8_lossy(&out.stderr));
    Some(body(&out.stdout))
}

/// An export body in a canonical form: each directory's children sorted (ncdu and dfdu
/// both write them in listing order, which need not agree). Relies on the one-entry-a-line
/// layout both writers use; names cannot break it (a newline in a name is escaped).
fn canonical(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    // Per open directory: its info object and its children so far, each already canonical.
    let mut stack: Vec<(String, Vec<String>)> = Vec::new();
    let mut top = Vec::new();
    for line in text.split('\n') {
        let line = line.strip_suffix(',').unwrap_or(line);
        let end = line.rfind('}').expect("an info object on every line") + 1;
        let (open, info) = match line[..end].strip_prefix('[') {
            Some(info) => (true, info.to_string()),
            None => (false, line[..end].to_string()),
        };
        if open {
            stack.push((info, Vec::new()));
        } else {
            stack.last_mut().expect("an entry inside a directory").1.push(info);
        }
        for close in line[end..].chars() {
            assert_eq!(close, ']', "{line}");
            // The last `]` closes the export's outer array, which has no directory.
            let Some((info, mut kids)) = stack.pop() else { continue };
            kids.sort();
            let dir = format!("[{info}{}]", kids.iter().map(|k| format!(",{k}")).collect::<String>());
            match stack.last_mut() {
                Some(parent) => parent.1.push(dir),
                None => top.push(dir),
            }
        }
    }
    assert!(stack.is_empty(), "unclosed directories in {text}");
    top.join("\n")
}

/// The reference for the writer and the sink together: a real tree scanned by dfdu and
/// exported is what Debian's ncdu writes when it scans the same tree itself. The tree has
/// what each field is for: sizes from `stat` (a sparse file whose apparent size is larger
/// than its disk use and does not fit 32 bits, an empty file, a file of two blocks),
/// hard links inside the tree and one with a third name outside it (nlink 3), a symlink
/// and a FIFO (`notreg`), an excluded directory and file, nested directories, and names
/// that need escapes or are not UTF-8.
#[test]
fn export_of_a_scan_is_what_ncdu_writes_for_the_same_tree() {
    use crate::meta::Kind;
    use crate::text::exclude::Exclude;
    use crate::tree::sink::ArenaSink;
    use crate::walk::reader::{Native, Reader};
    use crate::walk::scan::{self, Walk};
    use std::ffi::{CString, OsStr};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::symlink;
    use std::process::Command;

    let top = std::env::temp_dir().join(format!("dfdu-ncdu-ref-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&top);
    let root = top.join("tree");
    for d in ["d/e", "x/y", "skipme/inner", "deep/a/b/c"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("five"), b"hello").unwrap();
    std::fs::write(root.join("empty"), b"").unwrap();
    std::fs::write(root.join("d/two-blocks"), vec![7u8; 5000]).unwrap();
    std::fs::write(root.join("deep/a/b/c/leaf"), vec![1u8; 100]).unwrap();
    std::fs::write(root.join("skipme/inner/big"), vec![1u8; 9000]).unwrap();
    std::fs::write(root.join("x/skipme"), b"excluded file").unwrap();
    let sparse = std::fs::File::create(root.join("sparse")).unwrap();
    sparse.set_len(5 << 30).unwrap();
    drop(sparse);
    std::fs::write(root.join("linked"), b"twice").unwrap();
    std::fs::hard_link(root.join("linked"), root.join("d/e/linked-too")).unwrap();
    std::fs::write(root.join("thrice"), b"three names").unwrap();
    std::fs::hard_link(root.join("thrice"), root.join("x/thrice-2")).unwrap();
    std::fs::hard_link(root.join("thrice"), top.join("thrice-outside")).unwrap();
    symlink("five", root.join("sym")).unwrap();
    assert!(Command::new("mkfifo").arg(root.join("fifo")).status().unwrap().success());
    std::fs::write(root.join(OsStr::from_bytes(b"q\"\\\n\t\x7f\xc3\xa9 raw\xff")), b"odd").unwrap();

    let reference = ncdu_scan(&root, &["skipme"]);
    let arena = Arena::new();
    let path = CString::new(root.as_os_str().as_bytes()).unwrap();
    let meta = Native::stat_path(&path, Follow::Yes).unwrap();
    assert_eq!(meta.kind, Kind::Dir);
    let sink = ArenaSink::new(&arena);
    let r = sink.add_root(root.as_os_str().as_bytes(), &meta).unwrap();
    let mut exclude = Exclude::default();
    exclude.add(b"skipme");
    let empty = std::collections::HashSet::new();
    let walk = Walk { exclude: Some(&exclude), ..Walk::arena(2, &empty) };
    scan::scan_as::<Native, ArenaSink>(&walk, &sink, &path, &meta, r);
    let ours = export_bytes(&arena, r);
    let _ = std::fs::remove_dir_all(&top);
    let Some(reference) = reference else { return };
    // ncdu 1.18 writes `"dev":0` into excluded entries; ncdu 2 and dfdu write no device.
    let reference = String::from_utf8_lossy(&reference).replace(",\"dev\":0,\"excluded\"", ",\"excluded\"");
    for field in [
        "\"asize\":5368709120}",
        "\"nlink\":3",
        "\"notreg\":true",
        "\"excluded\":\"pattern\"",
        "\"dsize\":8192",
        "\\u007f",
    ] {
        assert!(reference.contains(field), "the tree lacks what the test is for ({field}): {reference}");
    }
    assert_eq!(canonical(&body(&ours)), canonical(reference.as_bytes()));
    // And the round trip through dfdu's reader keeps every field.
    let (b, r2) = load(&ours).unwrap();
    assert_eq!(canonical(&body(&export_bytes(&b, r2.root))), canonical(&body(&ours)));
}

/// dfdu's sharing-aware figures (`scan --shared`) ride along as extra keys on directories
/// only; an import keeps them and the next export writes them back unchanged, "frees"
/// exact (the root) or an estimate (`d`). An export from before "frees" comes back with
/// its exclusive bytes as the estimate.
#[test]
fn sharing_figures_go_round_on_directories() {
    let doc = "[1,2,{\"progname\":\"dfdu\",\"progver\":\"0\",\"timestamp\":42},\n[{\"name\":\"/r\",\"asize\":4096,\"dsize\":4096,\"dev\":7,\"dfdu_total_bytes\":20480,\"dfdu_exclusive_bytes\":8192,\"dfdu_set_shared_bytes\":4096,\"dfdu_disk_once_bytes\":16384,\"dfdu_frees_bytes\":12288},\n{\"name\":\"f\",\"asize\":1,\"dsize\":4096},\n[{\"name\":\"d\",\"asize\":4096,\"dsize\":4096,\"dfdu_total_bytes\":12288,\"dfdu_exclusive_bytes\":4096,\"dfdu_set_shared_bytes\":8192,\"dfdu_disk_once_bytes\":12288,\"dfdu_frees_bytes\":4096,\"dfdu_frees_estimate\":true},\n{\"name\":\"g\",\"asize\":0,\"dsize\":8192}]]]\n";
    let (a, r) = load(doc.as_bytes()).unwrap();
    let out = String::from_utf8(export_bytes(&a, r.root)).unwrap();
    assert_eq!(body(out.as_bytes()), body(doc.replace("\"asize\":0,", "").as_bytes()));
    let old = doc
        .replace(",\"dfdu_frees_bytes\":12288", "")
        .replace(",\"dfdu_frees_bytes\":4096,\"dfdu_frees_estimate\":true", "");
    let (a, r) = load(old.as_bytes()).unwrap();
    let out = String::from_utf8(export_bytes(&a, r.root)).unwrap();
    let estimated = |exclusive: u32| format!("\"dfdu_exclusive_bytes\":{exclusive},");
    assert!(
        out.contains("\"dfdu_disk_once_bytes\":16384,\"dfdu_frees_bytes\":8192,\"dfdu_frees_estimate\":true}"),
        "{out}"
    );
    assert!(
        out.contains(&estimated(4096)) && out.contains("\"dfdu_frees_bytes\":4096,\"dfdu_frees_estimate\":true}"),
        "{out}"
    );
}

/// What the format leaves open is accepted: minor versions up to 10,000, and further
/// values after the tree in the top-level array (read past, as ncdu does).
#[test]
fn open_ends_of_the_format_are_accepted() {
    let (a, r) = load(b"[1,10000,{},[{\"name\":\"/r\",\"asize\":3}]]").unwrap();
    assert_eq!(a.dir_totals(r.root).1, 3);
    assert!(load(b"[1,10001,{},[{\"name\":\"/r\"}]]").is_err());
    // The largest size and link count accepted, and one more.
    let max = format!(
        "[1,2,{{}},[{{\"name\":\"/r\",\"asize\":{},\"dsize\":{}}},{{\"name\":\"l\",\"nlink\":{}}}]]",
        1u64 << 60,
        1u64 << 60,
        u32::MAX
    );
    let (a, r) = load(max.as_bytes()).unwrap();
    assert_eq!(a.dir_totals(r.root).1, 1 << 60);
    for over in [max.replacen("1152921504606846976", "1152921504606846977", 1), max.replace("4294967295", "4294967296")]
    {
        assert!(load(over.as_bytes()).is_err(), "{over}");
    }
    let doc = b"[1,2,{},[{\"name\":\"/r\",\"asize\":3}],{\"later\":[1,2]},\"x\"]";
    let (a, r) = load(doc).unwrap();
    assert_eq!(a.dir_totals(r.root).1, 3);
    if let Some(back) = through_ncdu(doc) {
        assert_eq!(String::from_utf8_lossy(&back), "[{\"name\":\"/r\",\"asize\":3}]]", "ncdu reads past them too");
    }
}

/// Exports without inode numbers (gdu's, hand-written ones) give every file inode 0: only
/// entries marked as hard links may be folded by (device, inode), so two plain files are
/// both counted.
#[test]
fn files_without_inode_numbers_are_each_counted() {
    let json = b"[1,2,{\"progname\":\"x\"},[{\"name\":\"/r\",\"asize\":0,\"dsize\":0},{\"name\":\"a\",\"asize\":10,\"dsize\":4096},{\"name\":\"b\",\"asize\":20,\"dsize\":8192}]]";
    let (a, r) = load(json).unwrap();
    assert_eq!(a.dir_totals(r.root), (12288, 30, 2));
    let ids = a.children(r.root).unwrap();
    assert!(ids.clone().all(|id| a.link_of(id).is_none()), "plain files noted as links");
}

/// An excluded or unreadable entry carries no size of its own in dfdu's model (nothing was
/// stat'ed), even when a writer put sizes on it: they are neither counted nor exported.
#[test]
fn sizes_on_excluded_and_unreadable_entries_are_not_counted() {
    let json = b"[1,2,{\"progname\":\"x\"},[{\"name\":\"/r\",\"asize\":0,\"dsize\":0},{\"name\":\"x\",\"asize\":100,\"dsize\":4096,\"excluded\":\"pattern\"},{\"name\":\"e\",\"asize\":50,\"dsize\":8192,\"read_error\":true},{\"name\":\"f\",\"asize\":1,\"dsize\":512}]]";
    let (a, r) = load(json).unwrap();
    assert_eq!((a.dir_totals(r.root).0, a.dir_totals(r.root).1), (512, 1));
    for id in a.children(r.root).unwrap() {
        if a.flags(id).intersects(arena::F_EXCLUDED | arena::F_ERROR) {
            assert_eq!(a.own_sizes(id), (0, 0), "entry {id}");
        }
    }
}

/// An excluded directory (`[{"name":..,"excluded":..}]`) is a directory with a record of
/// its own: empty, finished, its total zero, so the browser can enter it and export writes
/// it back in brackets.
#[test]
fn an_excluded_directory_gets_an_empty_finished_record() {
    let json = b"[1,2,{\"progname\":\"x\"},[{\"name\":\"/r\",\"asize\":0,\"dsize\":0},[{\"name\":\"proc\",\"excluded\":\"otherfs\"}],{\"name\":\"s\",\"asize\":3,\"notreg\":true}]]";
    let (a, r) = load(json).unwrap();
    let ids: Vec<u32> = a.children(r.root).unwrap().collect();
    assert_eq!(ids.len(), 2);
    let (dirs, others): (Vec<u32>, Vec<u32>) = ids.into_iter().partition(|&id| a.kind(id) == Kind::Dir);
    assert_eq!((dirs.len(), others.len()), (1, 1), "the symlink-like entry must not become a directory");
    let d = a.dir_of(dirs[0]);
    assert_eq!(a.dir_entry(d), dirs[0]);
    assert_eq!(a.children(d).map(|c| c.len()), Some(0));
    assert_eq!(a.dir_totals(d), (0, 0, 0));
    assert!(a.dir_flags(d).is_done());
    let out = export_bytes(&a, r.root);
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("[{\"name\":\"proc\""), "{text}");
    assert!(!text.contains("[{\"name\":\"s\""), "{text}");
}

/// A directory is marked "error below" only for an unreadable entry inside it: a clean
/// export imports with no marks, and one `read_error` marks its directory and every
/// ancestor, but not a sibling directory.
#[test]
fn only_real_errors_mark_directories() {
    let clean = b"[1,2,{\"progname\":\"x\"},[{\"name\":\"/r\"},{\"name\":\"f\",\"asize\":1},[{\"name\":\"d\"},{\"name\":\"g\",\"asize\":2}]]]";
    let (a, r) = load(clean).unwrap();
    for dir in 0..a.dir_count() {
        assert!(!a.dir_flags(dir).error_below(), "clean import marked {dir}");
    }
    let one = b"[1,2,{\"progname\":\"x\"},[{\"name\":\"/r\"},[{\"name\":\"ok\"},{\"name\":\"g\",\"asize\":2}],[{\"name\":\"bad\"},{\"name\":\"s\",\"read_error\":true}]]]";
    let (a, r2) = load(one).unwrap();
    let mut marked = Vec::new();
    for dir in 0..a.dir_count() {
        if a.dir_flags(dir).error_below() {
            marked.push(a.dir_name(dir));
        }
    }
    marked.sort();
    assert_eq!(marked, vec![b"/r".to_vec(), b"bad".to_vec()]);
    let _ = (r, r2);
}

// ---------------------------------------------------------------------------------------------
// The binary format, from files built here byte by byte as ncdu's description says (not by
// `bin_export.rs`), and dfdu's own binary export round trips.

/// A CBOR head.
fn cb(major: u8, v: u64) -> Vec<u8> {
    let m = major << 5;
    match v {
        0..=23 => vec![m | v as u8],
        24..=255 => vec![m | 24, v as u8],
        256..=65535 => [vec![m | 25], (v as u16).to_be_bytes().to_vec()].concat(),
        _ => [vec![m | 27], v.to_be_bytes().to_vec()].concat(),
    }
}

/// One item: `(key, encoded value)` pairs in an indefinite-length map.
fn item(fields: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut v = vec![0xbf];
    for (k, val) in fields {
        v.extend(cb(0, *k));
        v.extend_from_slice(val);
    }
    v.push(0xff);
    v
}

fn int(v: i64) -> Vec<u8> {
    if v < 0 {
        cb(1, (-1 - v) as u64)
    } else {
        cb(0, v as u64)
    }
}

fn bytes(b: &[u8]) -> Vec<u8> {
    [cb(2, b.len() as u64), b.to_vec()].concat()
}

/// A zstd frame of one raw block with a 1-byte content size (single segment), as any
/// zstd writer may make it for a small block.
fn small_frame(content: &[u8]) -> Vec<u8> {
    assert!(content.len() < 256);
    let h = 1 | (content.len() as u32) << 3;
    [&[0x28, 0xb5, 0x2f, 0xfd, 0x20, content.len() as u8][..], &h.to_le_bytes()[..3], content].concat()
}

fn block(kind: u32, content: &[u8]) -> Vec<u8> {
    let tl = ((kind << 28) | (content.len() as u32 + 8)).to_be_bytes();
    [&tl[..], content, &tl[..]].concat()
}

/// A binary export of data blocks `(number, data)` in the order given, an unknown block
/// between them, and the index with `root`.
fn binary_file(data_blocks: &[(u32, Vec<u8>)], root: u64) -> Vec<u8> {
    let mut f = b"\xbfncduEX1".to_vec();
    let mut index = vec![0u64; data_blocks.len()];
    for (number, data) in data_blocks {
        let at = f.len() as u64;
        let b = block(0, &[&number.to_be_bytes()[..], &small_frame(data)].concat());
        index[*number as usize] = (at << 24) | b.len() as u64;
        f.extend(b);
        f.extend(block(5, b"a block type nobody knows"));
    }
    let mut content: Vec<u8> = index.iter().flat_map(|e| e.to_be_bytes()).collect();
    content.extend(root.to_be_bytes());
    f.extend(block(1, &content));
    f
}

/// The hand-built export: block 1 (first in the file) holds the root and most of its
/// children, block 0 the directory `sub` and its children; references within a block are
/// relative, across blocks absolute. Children, first to last: a, sub, h1, e, p, o.
fn hand_binary() -> Vec<u8> {
    let (t, n, prev, asz, dsz, dev, rderr, sub, ino, nlink) = (0, 1, 2, 3, 4, 5, 6, 12, 13, 14);
    let mut b0 = Vec::new();
    let h2 = b0.len() as u64;
    b0.extend(item(&[(t, int(3)), (n, bytes(b"h2")), (asz, int(5)), (dsz, int(4096)), (ino, int(7)), (nlink, int(2))]));
    let k = b0.len() as u64;
    b0.extend(item(&[(t, int(-4)), (n, bytes(b"k")), (prev, int(h2 as i64 - k as i64))]));
    let s = b0.len() as u64;
    // Unknown keys are skipped whatever their value: a tagged array, a float, a map.
    let unknown = [vec![0xc1, 0x82, 0x01, 0x61, b'x'], vec![0xfb, 0, 0, 0, 0, 0, 0, 0, 0], vec![0xa1, 0x01, 0x02]];
    let mut fields = vec![(t, int(0)), (n, bytes(b"sub")), (asz, int(4096)), (dsz, int(4096))];
    fields.extend([(40, unknown[0].clone()), (41, unknown[1].clone()), (42, unknown[2].clone())]);
    fields.push((sub, int(k as i64 - s as i64)));
    fields.push((prev, int(1 << 24)));
    fields.push((rderr, vec![0xf4]));
    b0.extend(item(&fields));
    let mut b1 = Vec::new();
    b1.extend(item(&[(t, int(1)), (n, bytes(b"a")), (asz, int(10)), (dsz, int(4096))]));
    let h1 = b1.len() as u64;
    let h1_fields = [
        (t, int(3)),
        (n, bytes(b"h1")),
        (prev, int(s as i64)),
        (asz, int(5)),
        (dsz, int(4096)),
        (ino, int(7)),
        (nlink, int(2)),
    ];
    b1.extend(item(&h1_fields));
    let mut last = h1;
    for (name, kind) in [(b"e", -1), (b"p", -2), (b"o", -3)] {
        let at = b1.len() as u64;
        b1.extend(item(&[(t, int(kind)), (n, bytes(name)), (prev, int(last as i64 - at as i64))]));
        last = at;
    }
    let root = b1.len() as u64;
    let root_fields = [
        (t, int(0)),
        (n, bytes(b"/r")),
        (asz, int(4096)),
        (dsz, int(4096)),
        (dev, int(9)),
        (sub, int(last as i64 - root as i64)),
    ];
    b1.extend(item(&root_fields));
    binary_file(&[(1, b1), (0, b0)], (1 << 24) | root)
}

fn load_any(bytes: &[u8]) -> Result<(Arena, Imported), ImportError> {
    let a = Arena::new();
    let r = import_any(bytes, &a)?;
    Ok((a, r))
}

/// Everything after the JSON export's header line.
fn json_body(a: &Arena, root: u32) -> String {
    let out = String::from_utf8(export_bytes(a, root)).unwrap();
    out.split_once('\n').unwrap().1.to_string()
}

#[test]
fn binary_built_by_hand_reads_as_its_description_says() {
    let (a, r) = load_any(&hand_binary()).unwrap();
    // The inode's first name (h2, in sub, read first) is counted; h1 is a further name.
    assert_eq!(a.dir_totals(r.root), (4 * 4096, 4096 + 10 + 4096 + 5, 8));
    let want = "[{\"name\":\"/r\",\"asize\":4096,\"dsize\":4096,\"dev\":9},\n\
        {\"name\":\"a\",\"asize\":10,\"dsize\":4096},\n\
        [{\"name\":\"sub\",\"asize\":4096,\"dsize\":4096},\n\
        {\"name\":\"h2\",\"asize\":5,\"dsize\":4096,\"ino\":7,\"hlnkc\":true,\"nlink\":2},\n\
        {\"name\":\"k\",\"excluded\":\"pattern\"}],\n\
        {\"name\":\"h1\",\"asize\":5,\"dsize\":4096,\"ino\":7,\"hlnkc\":true,\"nlink\":2},\n\
        {\"name\":\"e\",\"read_error\":true},\n\
        {\"name\":\"p\",\"excluded\":\"pattern\"},\n\
        [{\"name\":\"o\",\"excluded\":\"otherfs\"}]]]\n";
    assert_eq!(json_body(&a, r.root), want);
}

/// dfdu's binary export read back gives the same arena (its JSON export is the same),
/// with a directory of 3,000 entries that fills more than one block, names needing every
/// CBOR length form up to 32 KiB, hard links across devices' directories, exclusions and
/// a read error.
#[test]
fn binary_export_import_gives_the_same_tree() {
    let mut doc = String::from("[1,2,{},[{\"name\":\"/big\",\"asize\":4096,\"dsize\":4096,\"dev\":3}");
    doc.push_str(",[{\"name\":\"many\",\"asize\":4096,\"dsize\":4096}");
    for i in 0..3000 {
        doc.push_str(&format!(
            ",{{\"name\":\"file-{i:05}-{}\",\"asize\":{i},\"dsize\":{}}}",
            "n".repeat(i % 300),
            (i % 7) * 4096
        ));
    }
    doc.push(']');
    for len in [0usize, 23, 24, 255, 256, 65535, 32768] {
        doc.push_str(&format!(",{{\"name\":\"{}\",\"asize\":1}}", "x".repeat(len.clamp(1, 32768))));
    }
    doc.push_str(",{\"name\":\"l1\",\"asize\":9,\"dsize\":4096,\"ino\":77,\"hlnkc\":true,\"nlink\":2}");
    doc.push_str(",[{\"name\":\"d\",\"dev\":4},{\"name\":\"l2\",\"asize\":9,\"dsize\":4096,\"ino\":77,\"hlnkc\":true,\"nlink\":2}]");
    doc.push_str(",[{\"name\":\"mnt\",\"excluded\":\"otherfs\"}],{\"name\":\"skip\",\"excluded\":\"pattern\"},{\"name\":\"bad\",\"read_error\":true}]]");
    let doc = doc.replace(&format!("\"{}\"", "x".repeat(65535)), &format!("\"{}\"", "y".repeat(32768)));
    let (a, r) = load(doc.as_bytes()).unwrap();
    let mut bin = Vec::new();
    export_binary(&a, r.root, &mut bin).unwrap();
    let (b, r2) = load_any(&bin).unwrap();
    assert_eq!(a.dir_totals(r.root), b.dir_totals(r2.root));
    assert_eq!(json_body(&a, r.root), json_body(&b, r2.root));
    let data_blocks = bin.windows(4).filter(|w| w == &[0x28, 0xb5, 0x2f, 0xfd]).count();
    assert!(data_blocks >= 3, "{data_blocks} data blocks");
}

/// Damaged binary exports: each is refused with a message saying what is wrong.
#[test]
fn bad_binary_exports_are_refused_with_a_reason() {
    let good = hand_binary();
    let at = |needle: &[u8]| good.windows(needle.len()).position(|w| w == needle).unwrap();
    let mut cases: Vec<(Vec<u8>, &str)> = Vec::new();
    cases.push((good[..good.len() - 3].to_vec(), "a block of"));
    cases.push((good[..good.len() - 32].to_vec(), "no index block"));
    cases.push((good[..good.len() - 60].to_vec(), "a block cut short"));
    let mut wrong_end = good.clone();
    let end = wrong_end.len() - 1;
    wrong_end[end] ^= 1;
    cases.push((wrong_end, "closing length"));
    // Block 1's index entry names another offset.
    let mut index = good.clone();
    let e = index.len() - 4 - 16 + 3;
    index[e] ^= 1;
    cases.push((index, "index entry 1 does not match"));
    // The root reference into a block that does not exist.
    let mut root = good.clone();
    let r = root.len() - 4 - 4;
    root[r] = 0x7f;
    cases.push((root, "data block 127"));
    // A prev that points at the item itself: a loop, ended by the reference budget.
    let (t, n, prev) = (0, 1, 2);
    let looped = item(&[(t, int(1)), (n, bytes(b"x")), (prev, int(0))]);
    let root_item = item(&[(t, int(0)), (n, bytes(b"/")), (12, int(-(looped.len() as i64)))]);
    let root_at = looped.len() as u64;
    cases.push((binary_file(&[(0, [looped, root_item].concat())], root_at), "a loop"));
    let root_only = |it: Vec<u8>| binary_file(&[(0, it)], 0);
    cases.push((root_only(item(&[(t, int(1)), (n, bytes(b"/"))])), "not a directory"));
    cases.push((root_only(item(&[(t, int(0))])), "without a name"));
    cases.push((root_only(item(&[(n, bytes(b"/"))])), "without a type"));
    cases.push((root_only(vec![0xa1, 0x00, 0x00]), "not an item"));
    cases.push((root_only(item(&[(t, int(0)), (n, bytes(b"/")), (3, int(-5))])), "not an unsigned integer"));
    cases.push((root_only(item(&[(t, int(0)), (n, bytes(b"/")), (12, int(-100))])), "before its block's start"));
    cases.push((root_only(item(&[(t, int(0)), (n, bytes(b"/")), (3, cb(0, 1 << 61))])), "asize out of range"));
    cases.push((root_only(vec![0xbf, 0x00, 0x00, 0x01, 0x5c]), "reserved CBOR head"));
    cases.push((root_only(vec![0xbf, 0x00, 0x00, 0x01, 0x44, b'a']), "past its block's end"));
    // A frame claiming 16 MiB of content: refused before anything is decoded.
    let frame = [&[0x28, 0xb5, 0x2f, 0xfd, 0xa0][..], &(1u32 << 24).to_le_bytes(), &[1 | 1 << 3, 0, 0, b'x']].concat();
    let huge = [&b"\xbfncduEX1"[..], &block(0, &[&[0, 0, 0, 0][..], &frame].concat())].concat();
    cases.push((huge, "data block 0: a block of 16777216 bytes (at most 16777216)"));
    // A frame that is not zstd at all.
    let mut not_zstd = good.clone();
    not_zstd[at(&[0x28, 0xb5, 0x2f, 0xfd])] = 0x29;
    cases.push((not_zstd, "data block 1:"));
    for (input, want) in &cases {
        match load_any(input) {
            Ok(_) => panic!("accepted, expected {want:?}"),
            Err(e) => assert!(e.to_string().contains(want), "got {e}, expected {want:?}"),
        }
    }
}

/// Damaged binary exports (random bytes changed, cut, repeated) never panic: each is
/// read or refused.
#[test]
fn binary_survives_corrupted_inputs() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let (a, r) = load(&sample()).unwrap();
    let mut ours = Vec::new();
    export_binary(&a, r.root, &mut ours).unwrap();
    let bases = [hand_binary(), ours];
    let iters: usize = std::env::var("DFDU_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(3_000);
    let mut accepted = 0;
    for i in 0..iters {
        let input = mutate(&mut rng, &bases[i % 2]);
        let a = Arena::new();
        if import_any(&input[..], &a).is_ok() {
            accepted += 1;
        }
    }
    assert!(accepted < iters, "the mutations must be refused sometimes: {accepted}");
}

/// Damaged zstd-compressed JSON (Debian's `zstd -19` of a small dfdu export, so the
/// frame has Huffman-coded literals and FSE-coded sequences) never panics the decoder or
/// the reader: each is read or refused.
#[test]
fn compressed_json_survives_corrupted_inputs() {
    let base = include_bytes!("../../../tests/corpus/zstd/sample.json.zst");
    let (a, r) = load_any(base).expect("the sample reads");
    assert!(a.dir_totals(r.root).2 > 50, "the sample has its entries");
    let mut rng = Rng(0x5851_F42D_4C95_7F2D);
    let iters: usize = std::env::var("DFDU_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(3_000);
    let mut refused = 0;
    for _ in 0..iters {
        let input = mutate(&mut rng, base);
        let a = Arena::new();
        refused += usize::from(import_any(&input[..], &a).is_err());
    }
    assert!(refused > 0, "the mutations must be refused sometimes");
}

/// Compressed JSON with a byte changed anywhere after the frame header is refused (the
/// frame's checksum, which `zstd` writes, is checked), never read as other names or
/// sizes; a change the decoder never looks at (a padding bit) may read as the original.
#[test]
fn compressed_json_with_a_changed_byte_is_refused() {
    let base = include_bytes!("../../../tests/corpus/zstd/sample.json.zst");
    let (a, r) = load_any(base).unwrap();
    let want = json_body(&a, r.root);
    let (mut refused, mut misread) = (0, Vec::new());
    for at in 10..base.len() {
        let mut input = base.to_vec();
        input[at] ^= 0x20;
        match load_any(&input) {
            Err(_) => refused += 1,
            Ok((b, r2)) if json_body(&b, r2.root) == want => {}
            Ok(_) => misread.push(at),
        }
    }
    assert!(misread.is_empty(), "read as another tree with a byte changed at {misread:?} of {}", base.len());
    assert!(refused > base.len() * 9 / 10, "only {refused} refused");
}
