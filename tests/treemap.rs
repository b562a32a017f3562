//! `dfdu scan --treemap`: the SVG read by a real XML parser (python3's xml.etree), every
//! rectangle's area checked against its size (the size itself against the system `du`),
//! odd names giving valid XML, the same picture from an export and on a rerun, and the
//! file rendered to PNG by headless Chromium.

mod common;

use common::{dfdu_path, du_bytes, run_ok, Scratch};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

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

/// One sized rectangle as python3's XML parser reads it.
struct Box {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
    bytes: u64,
    /// Height of its header strip, when it is a directory drawn with one.
    header: f64,
    path: String,
}

/// Every sized rectangle of the SVG, by python3's XML parser.
fn rects(svg: &Path) -> Vec<Box> {
    let script = "import sys,xml.etree.ElementTree as E\nns='{http://www.w3.org/2000/svg}'\n\
        r=E.parse(sys.argv[1]).getroot()\nassert r.tag==ns+'svg'\n\
        for e in r.iter(ns+'rect'):\n  b=e.get('data-bytes')\n  if b is None: continue\n\
        \x20 t=e.find(ns+'title').text.split('\\n')[0]\n\
        \x20 print(e.get('x'),e.get('y'),e.get('width'),e.get('height'),b,e.get('data-header','0'),t.encode('unicode_escape').decode(),sep='\\t')";
    let out = run_ok(Command::new("python3").args(["-c", script]).arg(svg));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Vec<&str> = l.splitn(7, '\t').collect();
            let f = |k: usize| v[k].parse::<f64>().unwrap();
            Box {
                x: f(0),
                y: f(1),
                w: f(2),
                h: f(3),
                bytes: v[4].parse().unwrap(),
                header: f(5),
                path: v[6].to_string(),
            }
        })
        .collect()
}

/// The map's rectangle in the default 1200 x 800 picture: below the 24-pixel title bar,
/// above the 20-pixel legend.
const MAP: (f64, f64, f64, f64) = (0.0, 24.0, 1200.0, 756.0);

/// Every rectangle's area is its share of its parent's: the map for a top-level entry,
/// the parent directory's rectangle less its header strip below that; each stays inside
/// its parent (and the map), and its size is what `du` says.
fn check_areas(svg: &Path, total: u64, t: &Path, du_args: &[&str]) {
    let rs = rects(svg);
    assert!(rs.len() > 20, "too few rectangles: {}", rs.len());
    let by_path: std::collections::HashMap<&str, &Box> = rs.iter().map(|b| (b.path.as_str(), b)).collect();
    let root = t.display().to_string();
    let mut checked_with_du = 0;
    for b in &rs {
        let parent_path = b.path.rsplit_once('/').map_or("", |p| p.0);
        let parent_path = parent_path.strip_suffix(" (").unwrap_or(parent_path);
        let (px, py, pw, ph, pbytes) = match by_path.get(parent_path) {
            Some(p) => (p.x, p.y + p.header, p.w, p.h - p.header, p.bytes),
            None => {
                assert!(parent_path == root || b.path.contains("small items"), "{}: no parent drawn", b.path);
                (MAP.0, MAP.1, MAP.2, MAP.3, total)
            }
        };
        if parent_path != root && !by_path.contains_key(parent_path) {
            continue;
        }
        let want = b.bytes as f64 / pbytes as f64 * pw * ph;
        let area = b.w * b.h;
        assert!(
            (area - want).abs() <= 0.01 * want + 0.5,
            "{}: area {area} for {} bytes (want {want})",
            b.path,
            b.bytes
        );
        let inside = b.x >= px - 0.02 && b.y >= py - 0.02 && b.x + b.w <= px + pw + 0.02 && b.y + b.h <= py + ph + 0.02;
        assert!(inside, "{} leaves its parent's box", b.path);
        if let Some(rel) = b.path.strip_prefix(&format!("{root}/")) {
            let p = t.join(rel);
            if !b.path.contains("small items") && p.exists() {
                assert_eq!(b.bytes, du_bytes(du_args, &p), "{}: size vs du", b.path);
                checked_with_du += 1;
            }
        }
    }
    assert!(checked_with_du > 10, "only {checked_with_du} rectangles could be checked against du");
    assert!(rs.iter().any(|b| b.path.contains("small items")), "no merged small items");
    assert!(rs.iter().any(|b| b.header > 0.0), "no directory has a header");
}

#[test]
fn treemap_is_valid_svg_with_areas_proportional_to_du_sizes() {
    let scratch = Scratch::new("treemap");
    let t = tree(&scratch.dir);
    let svg = scratch.dir.join("map.svg");
    run_ok(Command::new(dfdu_path()).args(["scan", "-q", "--treemap"]).arg(&svg).arg(&t));
    check_areas(&svg, du_bytes(&["-sB1"], &t), &t, &["-sB1"]);
    let text = fs::read_to_string(&svg).unwrap();
    assert!(text.contains("a&lt;b&gt;&amp;&quot;q&quot;&apos;") && text.contains('\u{2401}'), "escaped names");

    // By apparent size, against du's apparent sizes.
    let app = scratch.dir.join("app.svg");
    run_ok(Command::new(dfdu_path()).args(["scan", "-q", "--apparent-size", "--treemap"]).arg(&app).arg(&t));
    check_areas(&app, du_bytes(&["-sB1", "--apparent-size"], &t), &t, &["-sB1", "--apparent-size"]);

    // From an export, and again: the same bytes.
    let export = scratch.dir.join("t.json");
    run_ok(Command::new(dfdu_path()).args(["scan", "-q", "-o"]).arg(&export).arg(&t));
    let (m1, m2) = (scratch.dir.join("m1.svg"), scratch.dir.join("m2.svg"));
    for m in [&m1, &m2] {
        run_ok(Command::new(dfdu_path()).args(["scan", "-q", "-f"]).arg(&export).arg("--treemap").arg(m));
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
    run_ok(Command::new(dfdu_path()).args(["scan", "-q", "--treemap"]).arg(&svg).arg(&t));
    let png = scratch.dir.join("map.png");
    let profile = scratch.subdir("profile");
    run_ok(
        Command::new("chromium")
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
            .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!("--screenshot={}", png.display()))
            .arg("--window-size=1200,800")
            .arg(format!("file://{}", svg.display())),
    );
    let data = fs::read(&png).expect("chromium wrote no PNG");
    assert_eq!(&data[..8], b"\x89PNG\r\n\x1a\n");
    // The IHDR chunk: 1200 x 800.
    let w = u32::from_be_bytes(data[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(data[20..24].try_into().unwrap());
    assert_eq!((w, h), (1200, 800));
    // A blank page compresses to almost nothing; a drawn treemap does not.
    assert!(data.len() > 10_000, "the PNG looks blank ({} bytes)", data.len());
}

fn have_chromium(test: &str) -> bool {
    let have = Command::new("chromium").arg("--version").output().is_ok_and(|o| o.status.success());
    if !have {
        eprintln!("SKIP: {test}: chromium is not installed (apt-get install chromium)");
        assert!(std::env::var_os("CI").is_none(), "CI must install chromium (.ci/run)");
    }
    have
}

/// One `<text>` as Chromium laid it out: its text, the box it drew in (`getBBox`, in the
/// picture's coordinates) and the box it must stay in (`data-box`).
struct Shown {
    text: String,
    bbox: [f64; 4],
    within: [f64; 4],
}

/// Renders `svg` inline in a page 1200 pixels wide in headless Chromium and reads back
/// every text element's laid-out box (a script in the page writes them into the DOM,
/// which `--dump-dom` prints), and the SVG's viewBox.
fn chromium_texts(dir: &Path, svg: &Path) -> ([f64; 4], Vec<Shown>) {
    let page = dir.join("page.html");
    let script = "const s=document.querySelector('svg'),v=s.viewBox.baseVal,o=[[v.x,v.y,v.width,v.height].join(' ')];\
        for(const t of s.querySelectorAll('text')){const b=t.getBBox();\
        o.push([encodeURIComponent(t.textContent),b.x,b.y,b.width,b.height,t.getAttribute('data-box')].join(' '))}\
        document.getElementById('r').textContent=o.join('\\n');";
    let html = format!(
        "<!DOCTYPE html><html><body style=\"margin:0\"><div style=\"width:1200px\">{}</div><pre id=\"r\"></pre><script>{script}</script></body></html>",
        fs::read_to_string(svg).unwrap()
    );
    fs::write(&page, html).unwrap();
    let profile = dir.join("profile");
    let out = run_ok(
        Command::new("chromium")
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
            .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("--dump-dom")
            .arg(format!("file://{}", page.display())),
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("<pre id=\"r\">").expect("the page's result") + 12;
    let result = &dom[start..start + dom[start..].find("</pre>").unwrap()];
    let mut lines = result.lines();
    let nums = |v: &[&str]| -> [f64; 4] { std::array::from_fn(|k| v[k].parse().unwrap()) };
    let view = nums(&lines.next().unwrap().split(' ').collect::<Vec<_>>());
    let texts = lines
        .map(|l| {
            let v: Vec<&str> = l.split(' ').collect();
            Shown { text: percent_decode(v[0]), bbox: nums(&v[1..5]), within: nums(&v[5..9]) }
        })
        .collect();
    (view, texts)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let (mut out, mut k) = (Vec::new(), 0);
    while k < b.len() {
        if b[k] == b'%' {
            out.push(u8::from_str_radix(&s[k + 1..k + 3], 16).unwrap());
            k += 3;
        } else {
            out.push(b[k]);
            k += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// A tree shaped like /usr (lib, share and bin the largest, then include, sbin, libexec,
/// src, local, games), of sparse files measured by apparent size, with subdirectories in
/// the large ones.
fn usr_like(root: &Path) -> std::path::PathBuf {
    let t = root.join("usr");
    let dirs: [(&str, u64, usize); 9] = [
        ("lib", 6_000, 12),
        ("share", 4_000, 16),
        ("bin", 1_200, 0),
        ("include", 300, 6),
        ("sbin", 120, 0),
        ("libexec", 90, 3),
        ("src", 60, 2),
        ("local", 12, 2),
        ("games", 2, 0),
    ];
    for (name, mb, subdirs) in dirs {
        let d = t.join(name);
        fs::create_dir_all(&d).unwrap();
        let homes: Vec<std::path::PathBuf> = if subdirs == 0 {
            vec![d.clone()]
        } else {
            (0..subdirs).map(|k| d.join(format!("{name}-part{k}"))).collect()
        };
        for (k, home) in homes.iter().enumerate() {
            fs::create_dir_all(home).unwrap();
            let share = mb * 1_000_000 / homes.len() as u64 / (k as u64 + 1).min(3);
            for f in 0..20u64 {
                let file = fs::File::create(home.join(format!("file{f}.so"))).unwrap();
                file.set_len(share / (f + 2)).unwrap();
            }
        }
    }
    t
}

/// The three largest top-level directories of the picture by its own sizes.
fn largest_top_level(svg: &Path, root: &Path) -> Vec<String> {
    let root = format!("{}/", root.display());
    let mut top: Vec<(u64, String)> = rects(svg)
        .into_iter()
        .filter_map(|b| b.path.strip_prefix(&root).filter(|r| !r.contains('/')).map(|r| (b.bytes, r.to_string())))
        .filter(|(_, name)| Path::new(&root).join(name).is_dir())
        .collect();
    top.sort_by(|x, y| y.cmp(x));
    top.into_iter().take(3).map(|(_, n)| n).collect()
}

/// Issue 31: the treemap of /usr labelled no directory (`lib`, `share`, `bin` appeared
/// nowhere), cut labels to 2-4 letters, had no legend, no visible title and a fixed
/// size. Rendered by headless Chromium, every text lies inside its box and inside the
/// picture (whole, never cut: nothing ends in "…"), the three largest top-level
/// directories are named in their boxes and in the legend, the title gives the root and
/// its total, and the SVG scales (a viewBox, no fixed width). For a /usr-like tree and a
/// generated one.
#[test]
fn treemap_names_the_largest_directories_visibly_in_chromium() {
    if !have_chromium("treemap_names_the_largest_directories_visibly_in_chromium") {
        return;
    }
    let scratch = Scratch::new("treemap-names");
    let usr = usr_like(&scratch.dir);
    let generated = scratch.dir.join("gen");
    let args = ["--entries", "20000", "--seed", "7"].map(std::ffi::OsString::from);
    xtask::gen::main([&args[..], &[generated.clone().into()]].concat()).unwrap_or_else(|e| panic!("gen: {e}"));
    for (t, measure) in [(&usr, "--apparent-size"), (&generated, "--no-shared")] {
        let svg = scratch.dir.join("map.svg");
        let report = run_ok(
            Command::new(dfdu_path()).args(["scan", "-q", "-b", "--json", measure, "--treemap"]).arg(&svg).arg(t),
        );
        let report = String::from_utf8(report.stdout).unwrap();
        let key = if measure == "--apparent-size" { "\"apparent_bytes\":" } else { "\"disk_bytes\":" };
        let total: String =
            report[report.find(key).unwrap() + key.len()..].chars().take_while(char::is_ascii_digit).collect();
        let text = fs::read_to_string(&svg).unwrap();
        let head = &text[..text.find('>').unwrap()];
        let svg_tag = &text[text.find("<svg").unwrap()..];
        let svg_tag = &svg_tag[..svg_tag.find('>').unwrap()];
        assert!(svg_tag.contains("viewBox=\"0 0 1200 800\"") && !svg_tag.contains("width="), "{head} / {svg_tag}");
        let (view, texts) = chromium_texts(&scratch.dir, &svg);
        assert_eq!(view, [0.0, 0.0, 1200.0, 800.0]);
        assert!(texts.len() > 20, "only {} texts", texts.len());
        for s in &texts {
            let [x, y, w, h] = s.bbox;
            let [bx, by, bw, bh] = s.within;
            let inside = x >= bx - 0.5 && y >= by - 0.5 && x + w <= bx + bw + 0.5 && y + h <= by + bh + 0.5;
            assert!(inside, "{:?} drawn at {:?}, outside its box {:?}", s.text, s.bbox, s.within);
            assert!(x >= 0.0 && y >= 0.0 && x + w <= 1200.0 && y + h <= 800.0, "{:?} leaves the picture", s.text);
        }
        let title = &texts.iter().find(|s| s.within[1] == 0.0 && s.within[3] == 24.0).expect("a title").text;
        assert!(
            title.starts_with(&t.display().to_string()) && title.contains(&format!("({total} bytes")),
            "title {title:?}"
        );
        assert!(texts.iter().all(|s| std::ptr::eq(&s.text, title) || !s.text.contains('…')), "a label was cut");
        let top = largest_top_level(&svg, t);
        assert_eq!(top.len(), 3, "{top:?}");
        if t == &usr {
            assert_eq!(top, ["lib", "share", "bin"]);
        }
        for name in &top {
            let in_map = texts
                .iter()
                .any(|s| s.within[1] >= 24.0 && s.within[1] < 780.0 && s.text.split("  ").next() == Some(name));
            let in_legend = texts.iter().any(|s| s.within[1] >= 780.0 && s.text.split("  ").next() == Some(name));
            assert!(in_map && in_legend, "{name}: in the map {in_map}, in the legend {in_legend}");
        }
    }
}
