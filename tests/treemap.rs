//! `dfdu scan --treemap`: the SVG read by a real XML parser (python3's xml.etree), every
//! rectangle's area checked against its size (the size itself against the system `du`),
//! odd names giving valid XML, the same picture from an export and on a rerun, and the
//! file rendered to PNG by headless Chromium.

mod common;

use common::Scratch;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Output};

fn dfdu() -> &'static str {
    env!("CARGO_BIN_EXE_dfdu")
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn du_b1(args: &[&str], path: &Path) -> u64 {
    let out = run(Command::new("du").args(args).arg(path));
    String::from_utf8_lossy(&out.stdout).split('\t').next().unwrap().trim().parse().unwrap()
}

/// A tree of directories three deep with files of many sizes (so some merge into "small
/// items") and names that are not plain text.
fn tree(root: &Path) -> std::path::PathBuf {
    let t = root.join("t");
    for d in 0..5 {
        for s in 0..3 {
            let dir = t.join(format!("d{d}/s{s}"));
            fs::create_dir_all(&dir).unwrap();
            for f in 0..12 {
                let n = (d * 37 + s * 11 + f * 5) % 23;
                let bytes = if f % 4 == 0 { 200_000 * (n + 1) } else { 100 * (n + 1) };
                fs::write(dir.join(format!("f{f}")), vec![b'x'; bytes]).unwrap();
            }
        }
    }
    for name in [&b"a<b>&\"q\"'"[..], b"ctl\x01\x1b\x7f", b"bad\xff\xfeutf8", b"\xef\xbf\xbf"] {
        let p = t.join(std::ffi::OsStr::from_bytes(name));
        fs::write(p, vec![b'y'; 900_000]).unwrap();
    }
    t
}

/// (x, y, width, height, bytes, path) of every sized rectangle, by python3's XML parser.
fn rects(svg: &Path) -> Vec<(f64, f64, f64, f64, u64, String)> {
    let script = "import sys,xml.etree.ElementTree as E\nns='{http://www.w3.org/2000/svg}'\n\
        r=E.parse(sys.argv[1]).getroot()\nassert r.tag==ns+'svg'\n\
        for e in r.iter(ns+'rect'):\n  b=e.get('data-bytes')\n  if b is None: continue\n\
        \x20 t=e.find(ns+'title').text.split('\\n')[0]\n\
        \x20 print(e.get('x'),e.get('y'),e.get('width'),e.get('height'),b,t.encode('unicode_escape').decode(),sep='\\t')";
    let out = run(Command::new("python3").args(["-c", script]).arg(svg));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Vec<&str> = l.splitn(6, '\t').collect();
            let f = |k: usize| v[k].parse::<f64>().unwrap();
            (f(0), f(1), f(2), f(3), v[4].parse().unwrap(), v[5].to_string())
        })
        .collect()
}

fn check_areas(svg: &Path, total: u64, t: &Path, du_args: &[&str]) {
    let rs = rects(svg);
    assert!(rs.len() > 20, "too few rectangles: {}", rs.len());
    let canvas = 1200.0 * 800.0;
    let mut checked_with_du = 0;
    for (x, y, w, h, bytes, path) in &rs {
        let want = *bytes as f64 / total as f64 * canvas;
        let area = w * h;
        assert!((area - want).abs() <= 0.01 * canvas, "{path}: area {area} for {bytes} bytes (want {want})");
        assert!((area - want).abs() <= 0.01 * want + 0.5, "{path}: area {area} vs {want}, off by more than 1%");
        assert!(*x >= -0.01 && *y >= -0.01 && x + w <= 1200.01 && y + h <= 800.01, "{path} leaves the canvas");
        if let Some(rel) = path.strip_prefix(&format!("{}/", t.display())) {
            let p = t.join(rel);
            if !path.contains("small items") && p.exists() {
                assert_eq!(*bytes, du_b1(du_args, &p), "{path}: size vs du");
                checked_with_du += 1;
            }
        }
    }
    assert!(checked_with_du > 10, "only {checked_with_du} rectangles could be checked against du");
    assert!(rs.iter().any(|r| r.5.contains("small items")), "no merged small items");
}

#[test]
fn treemap_is_valid_svg_with_areas_proportional_to_du_sizes() {
    let scratch = Scratch::new("treemap");
    let t = tree(&scratch.dir);
    let svg = scratch.dir.join("map.svg");
    run(Command::new(dfdu()).args(["scan", "-q", "--treemap"]).arg(&svg).arg(&t));
    check_areas(&svg, du_b1(&["-sB1"], &t), &t, &["-sB1"]);
    let text = fs::read_to_string(&svg).unwrap();
    assert!(text.contains("a&lt;b&gt;&amp;&quot;q&quot;&apos;") && text.contains('\u{2401}'), "escaped names");

    // By apparent size, against du's apparent sizes.
    let app = scratch.dir.join("app.svg");
    run(Command::new(dfdu()).args(["scan", "-q", "--apparent-size", "--treemap"]).arg(&app).arg(&t));
    check_areas(&app, du_b1(&["-sB1", "--apparent-size"], &t), &t, &["-sB1", "--apparent-size"]);

    // From an export, and again: the same bytes.
    let export = scratch.dir.join("t.json");
    run(Command::new(dfdu()).args(["scan", "-q", "-o"]).arg(&export).arg(&t));
    let (m1, m2) = (scratch.dir.join("m1.svg"), scratch.dir.join("m2.svg"));
    for m in [&m1, &m2] {
        run(Command::new(dfdu()).args(["scan", "-q", "-f"]).arg(&export).arg("--treemap").arg(m));
    }
    assert_eq!(fs::read(&m1).unwrap(), fs::read(&m2).unwrap(), "deterministic");
    assert_eq!(fs::read(&m1).unwrap(), fs::read(&svg).unwrap(), "the export draws what the scan drew");
}

#[test]
fn treemap_renders_in_headless_chromium() {
    let have = Command::new("chromium").arg("--version").output().is_ok_and(|o| o.status.success());
    if !have {
        eprintln!("SKIP: chromium is not installed (apt-get install chromium); the treemap was not rendered");
        assert!(std::env::var_os("CI").is_none(), "CI must install chromium (.ci/run)");
        return;
    }
    let scratch = Scratch::new("treemap-png");
    let t = tree(&scratch.dir);
    let svg = scratch.dir.join("map.svg");
    run(Command::new(dfdu()).args(["scan", "-q", "--treemap"]).arg(&svg).arg(&t));
    let png = scratch.dir.join("map.png");
    let profile = scratch.subdir("profile");
    run(Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1200,800")
        .arg(format!("file://{}", svg.display())));
    let data = fs::read(&png).expect("chromium wrote no PNG");
    assert_eq!(&data[..8], b"\x89PNG\r\n\x1a\n");
    // The IHDR chunk: 1200 x 800.
    let w = u32::from_be_bytes(data[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(data[20..24].try_into().unwrap());
    assert_eq!((w, h), (1200, 800));
    // A blank page compresses to almost nothing; a drawn treemap does not.
    assert!(data.len() > 10_000, "the PNG looks blank ({} bytes)", data.len());
}
