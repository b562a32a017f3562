//! Tests of the `getattrlistbulk` buffer parser against hand-built buffers (run on every
//! platform: the parser is plain Rust).

use super::*;

/// One entry as a test describes it; `pack` lays it out the way XNU does.
#[derive(Clone)]
struct Spec {
    name: Vec<u8>,
    objtype: u32,
    dev: i32,
    fileid: u64,
    flags: u32,
    mtime: (i64, i64),
    ctime: (i64, i64),
    atime: (i64, i64),
    nlink: u32,
    mount_status: u32,
    alloc_bytes: i64,
    data_bytes: i64,
    error: u32,
    /// APFS clone attributes: private size, clone id, `EF_*` flags.
    private_bytes: i64,
    clone_id: u64,
    ext_flags: u64,
    /// Attributes the "file system" did not return.
    missing: AttrSet,
}

fn file(name: &[u8]) -> Spec {
    Spec {
        name: name.to_vec(),
        objtype: VREG,
        dev: 0x0100_0004,
        fileid: 1000,
        flags: 0,
        mtime: (1_700_000_000, 5),
        ctime: (1_700_000_100, 6),
        atime: (1_700_000_200, 7),
        nlink: 1,
        mount_status: 0,
        alloc_bytes: 4096,
        data_bytes: 1234,
        error: 0,
        private_bytes: 4096,
        clone_id: 0,
        ext_flags: 0,
        missing: AttrSet::default(),
    }
}

fn dir(name: &[u8]) -> Spec {
    Spec { objtype: VDIR, nlink: 3, alloc_bytes: 0, data_bytes: 96, ..file(name) }
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_ne_bytes());
}

fn put_ts(out: &mut Vec<u8>, (sec, nsec): (i64, i64)) {
    out.extend_from_slice(&sec.to_ne_bytes());
    out.extend_from_slice(&nsec.to_ne_bytes());
}

/// Appends one group for `s` as the kernel packs it under `req`.
fn pack(out: &mut Vec<u8>, req: &Request, s: &Spec) {
    let is_dir = s.objtype == VDIR;
    let asked = AttrSet {
        dir: if is_dir { req.attrs.dir } else { 0 },
        file: if is_dir { 0 } else { req.attrs.file },
        ..req.attrs
    };
    let returned = if s.error != 0 {
        AttrSet { common: ATTR_CMN_RETURNED_ATTRS | ATTR_CMN_NAME | ATTR_CMN_ERROR, ..AttrSet::default() }
    } else {
        AttrSet {
            common: asked.common & !s.missing.common,
            dir: asked.dir & !s.missing.dir,
            file: asked.file & !s.missing.file,
            fork: asked.fork & !s.missing.fork,
            ..AttrSet::default()
        }
    };
    let layout = if req.pack_invalid { asked } else { returned };
    let start = out.len();
    let mut g = Vec::new();
    put_u32(&mut g, 0); // length, patched below
    for v in [returned.common, returned.vol, returned.dir, returned.file, returned.fork] {
        put_u32(&mut g, v);
    }
    if layout.common & ATTR_CMN_ERROR != 0 {
        put_u32(&mut g, s.error);
    }
    let name_ref = g.len();
    // The attrreference, patched below.
    g.extend_from_slice(&[0; 8]);
    // Values the entry does not have are packed as zeros (FSOPT_PACK_INVAL_ATTRS).
    let real = |set: u32, bit: u32| set & bit != 0;
    let common = |g: &mut Vec<u8>, bit: u32| {
        let ok = real(returned.common, bit);
        match bit {
            ATTR_CMN_DEVID => put_u32(g, if ok { s.dev as u32 } else { 0 }),
            ATTR_CMN_OBJTYPE => put_u32(g, if ok { s.objtype } else { 0 }),
            ATTR_CMN_MODTIME => put_ts(g, if ok { s.mtime } else { (0, 0) }),
            ATTR_CMN_CHGTIME => put_ts(g, if ok { s.ctime } else { (0, 0) }),
            ATTR_CMN_ACCTIME => put_ts(g, if ok { s.atime } else { (0, 0) }),
            ATTR_CMN_FLAGS => put_u32(g, if ok { s.flags } else { 0 }),
            ATTR_CMN_FILEID => g.extend_from_slice(&(if ok { s.fileid } else { 0 }).to_ne_bytes()),
            _ => unreachable!("test packs only known attributes"),
        }
    };
    for &(bit, _) in COMMON_SLOTS {
        if layout.common & bit != 0 {
            common(&mut g, bit);
        }
    }
    let (slots, layout_bits, returned_bits) =
        if is_dir { (DIR_SLOTS, layout.dir, returned.dir) } else { (FILE_SLOTS, layout.file, returned.file) };
    for &(bit, field) in slots {
        if layout_bits & bit == 0 {
            continue;
        }
        let ok = real(returned_bits, bit);
        match field {
            Field::LinkCount => put_u32(&mut g, if ok { s.nlink } else { 0 }),
            Field::MountStatus => put_u32(&mut g, if ok { s.mount_status } else { 0 }),
            Field::AllocSize => g.extend_from_slice(&(if ok { s.alloc_bytes } else { 0 }).to_ne_bytes()),
            Field::DataLength => g.extend_from_slice(&(if ok { s.data_bytes } else { 0 }).to_ne_bytes()),
            _ => unreachable!("not a directory or file attribute"),
        }
    }
    for &(bit, field) in EXTENDED_SLOTS {
        if layout.fork & bit == 0 {
            continue;
        }
        let ok = real(returned.fork, bit);
        let v = match field {
            Field::PrivateSize => s.private_bytes as u64,
            Field::CloneId => s.clone_id,
            Field::ExtFlags => s.ext_flags,
            _ => unreachable!("not an extended common attribute"),
        };
        g.extend_from_slice(&(if ok { v } else { 0 }).to_ne_bytes());
    }
    let name_at = g.len();
    g.extend_from_slice(&s.name);
    g.push(0);
    while g.len() % 4 != 0 {
        g.push(0);
    }
    while g.len() % 8 != 0 {
        g.push(0); // groups start 8-byte aligned
    }
    let offset = (name_at - name_ref) as i32;
    g[name_ref..name_ref + 4].copy_from_slice(&offset.to_ne_bytes());
    g[name_ref + 4..name_ref + 8].copy_from_slice(&(s.name.len() as u32 + 1).to_ne_bytes());
    let len = g.len() as u32;
    g[0..4].copy_from_slice(&len.to_ne_bytes());
    out.extend_from_slice(&g);
    assert_eq!((out.len() - start) % 8, 0);
}

fn batch(req: &Request, specs: &[Spec]) -> Vec<u8> {
    let mut out = Vec::new();
    for s in specs {
        pack(&mut out, req, s);
    }
    out
}

/// (name, ino, status) of every entry, or the error.
fn parse(buf: &[u8], count: usize, req: &Request) -> Result<Vec<(Vec<u8>, u64, Status)>, Malformed> {
    let mut got = Vec::new();
    parse_batch(buf, count, req, &mut |e| got.push((e.name.to_bytes().to_vec(), e.ino, e.status)))?;
    Ok(got)
}

fn complete(st: &Status) -> Meta {
    match st {
        Status::Complete(m) => *m,
        other => panic!("expected complete metadata, got {other:?}"),
    }
}

const PACKED: Request = Request { pack_invalid: false, ..REQUEST };

#[test]
fn normal_file_and_directory() {
    for req in [REQUEST, PACKED] {
        let buf = batch(&req, &[file(b"notes.txt"), dir(b"src")]);
        let got = parse(&buf, 2, &req).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, b"notes.txt");
        assert_eq!(got[0].1, 1000);
        let m = complete(&got[0].2);
        assert_eq!(m.kind, Kind::File);
        assert_eq!((m.dev, m.ino, m.nlink), (0x0100_0004, 1000, 1));
        assert_eq!((m.blocks, m.size), (8, 1234));
        assert_eq!(m.mtime, Timespec { sec: 1_700_000_000, nsec: 5 });
        assert_eq!(m.ctime, Timespec { sec: 1_700_000_100, nsec: 6 });
        assert_eq!(m.atime, Timespec { sec: 1_700_000_200, nsec: 7 });
        assert_eq!(got[1].0, b"src");
        let d = complete(&got[1].2);
        assert_eq!(d.kind, Kind::Dir);
        assert_eq!((d.nlink, d.blocks, d.size), (3, 0, 96));
    }
}

#[test]
fn allocation_rounds_up_to_512_byte_blocks() {
    let s = Spec { alloc_bytes: 513, ..file(b"odd") };
    let got = parse(&batch(&REQUEST, &[s]), 1, &REQUEST).unwrap();
    assert_eq!(complete(&got[0].2).blocks, 2);
    let s = Spec { alloc_bytes: -1, data_bytes: -5, ..file(b"negative") };
    let got = parse(&batch(&REQUEST, &[s]), 1, &REQUEST).unwrap();
    let m = complete(&got[0].2);
    assert_eq!((m.blocks, m.size), (0, 0));
}

#[test]
fn hard_links_keep_device_file_id_and_link_count() {
    let a = Spec { nlink: 2, fileid: 77, ..file(b"a") };
    let b = Spec { name: b"b".to_vec(), ..a.clone() };
    let got = parse(&batch(&REQUEST, &[a, b]), 2, &REQUEST).unwrap();
    let (ma, mb) = (complete(&got[0].2), complete(&got[1].2));
    assert_eq!((ma.dev, ma.ino, ma.nlink), (mb.dev, mb.ino, 2));
    assert_eq!(ma.ino, 77);
}

#[test]
fn kinds_from_object_type() {
    let link = Spec { objtype: VLNK, ..file(b"ln") };
    let fifo = Spec { objtype: 7, ..file(b"fifo") };
    let got = parse(&batch(&REQUEST, &[link, fifo]), 2, &REQUEST).unwrap();
    assert_eq!(complete(&got[0].2).kind, Kind::Symlink);
    assert_eq!(complete(&got[1].2).kind, Kind::Other);
}

#[test]
fn missing_attribute_asks_for_a_stat_and_shifts_nothing() {
    let cases = [
        AttrSet { file: ATTR_FILE_ALLOCSIZE, ..AttrSet::default() },
        AttrSet { common: ATTR_CMN_DEVID, ..AttrSet::default() },
        AttrSet { common: ATTR_CMN_MODTIME, file: ATTR_FILE_LINKCOUNT, ..AttrSet::default() },
    ];
    for req in [REQUEST, PACKED] {
        for missing in cases {
            let lacking = Spec { missing, ..file(b"lacking") };
            let buf = batch(&req, &[lacking, file(b"after"), dir(b"d")]);
            let got = parse(&buf, 3, &req).unwrap();
            assert!(matches!(got[0].2, Status::NeedsStat), "{missing:?}");
            assert_eq!(got[0].0, b"lacking");
            assert_eq!(complete(&got[1].2).size, 1234, "{missing:?}");
            assert_eq!(complete(&got[2].2).kind, Kind::Dir);
        }
    }
}

#[test]
fn missing_file_id_means_inode_zero() {
    let s = Spec { missing: AttrSet { common: ATTR_CMN_FILEID, ..AttrSet::default() }, ..file(b"x") };
    for req in [REQUEST, PACKED] {
        let got = parse(&batch(&req, &[s.clone(), file(b"y")]), 2, &req).unwrap();
        assert_eq!(got[0].1, 0);
        assert!(matches!(got[0].2, Status::NeedsStat));
        assert_eq!(got[1].1, 1000);
    }
}

#[test]
fn missing_object_type_asks_for_a_stat() {
    let s = Spec { missing: AttrSet { common: ATTR_CMN_OBJTYPE, ..AttrSet::default() }, ..dir(b"what") };
    for req in [REQUEST, PACKED] {
        let got = parse(&batch(&req, &[s.clone(), file(b"next")]), 2, &req).unwrap();
        assert!(matches!(got[0].2, Status::NeedsStat));
        assert_eq!(got[1].0, b"next");
    }
}

/// Checks every field of `m` against what `s` packed.
fn assert_meta(m: &Meta, s: &Spec) {
    let ts = |(sec, nsec): (i64, i64)| Timespec { sec, nsec: nsec as u32 };
    assert_eq!((m.dev, m.ino, m.nlink), (s.dev as u64, s.fileid, u64::from(s.nlink)));
    assert_eq!((m.blocks, m.size), ((s.alloc_bytes as u64).div_ceil(512), s.data_bytes as u64));
    assert_eq!((m.mtime, m.ctime, m.atime), (ts(s.mtime), ts(s.ctime), ts(s.atime)));
}

#[test]
fn missing_flags_are_no_flags_and_shift_nothing() {
    // Flags are optional: the entry stays complete, so every later slot must be read
    // from its own place whichever packing rule is in force.
    let s = Spec {
        missing: AttrSet { common: ATTR_CMN_FLAGS, ..AttrSet::default() },
        flags: SF_FIRMLINK,
        fileid: 0x1122_3344_5566_7788,
        alloc_bytes: 8192,
        ..dir(b"d")
    };
    for req in [REQUEST, PACKED] {
        let got = parse(&batch(&req, std::slice::from_ref(&s)), 1, &req).unwrap();
        let m = complete(&got[0].2);
        assert_eq!(m.kind, Kind::Dir);
        assert_meta(&m, &s);
    }
}

#[test]
fn error_entries_carry_the_error_number() {
    for req in [REQUEST, PACKED] {
        let bad = Spec { error: 13, ..file(b"secret") };
        let buf = batch(&req, &[file(b"a"), bad, dir(b"z")]);
        let got = parse(&buf, 3, &req).unwrap();
        assert_eq!(got[1].0, b"secret");
        assert!(matches!(got[1].2, Status::Failed(13)));
        assert_eq!(got[1].1, 0);
        assert_eq!(complete(&got[2].2).kind, Kind::Dir);
    }
}

#[test]
fn names_are_bytes() {
    let long = vec![b'n'; 255];
    let names: [&[u8]; 7] =
        [b"new\nline", b"\xff\xfe not utf-8", b"tab\there", "ünïcødé 文件 🚀".as_bytes(), b"x", b"-rf", &long];
    for req in [REQUEST, PACKED] {
        let specs: Vec<Spec> = names.iter().map(|n| file(n)).collect();
        let got = parse(&batch(&req, &specs), specs.len(), &req).unwrap();
        let seen: Vec<&[u8]> = got.iter().map(|g| g.0.as_slice()).collect();
        assert_eq!(seen, names);
    }
}

#[test]
fn dot_and_dot_dot_are_skipped() {
    let buf = batch(&REQUEST, &[dir(b"."), dir(b".."), file(b"..."), file(b".hidden")]);
    let got = parse(&buf, 4, &REQUEST).unwrap();
    let seen: Vec<&[u8]> = got.iter().map(|g| g.0.as_slice()).collect();
    assert_eq!(seen, [&b"..."[..], b".hidden"]);
}

#[test]
fn firmlinks_are_links_and_mount_points_need_a_stat() {
    let firm = Spec { flags: SF_FIRMLINK, ..dir(b"Users") };
    let mount = Spec { mount_status: DIR_MNTSTATUS_MNTPOINT, ..dir(b"Data") };
    let got = parse(&batch(&REQUEST, &[firm, mount]), 2, &REQUEST).unwrap();
    let m = complete(&got[0].2);
    assert_eq!((m.kind, m.nlink), (Kind::Symlink, 1));
    assert!(matches!(got[1].2, Status::NeedsStat));
    assert_eq!(got[1].1, 1000);
}

#[test]
fn every_truncation_is_an_error() {
    for req in [REQUEST, PACKED] {
        let buf = batch(&req, &[file(b"one"), dir(b"two"), file(b"three")]);
        assert!(parse(&buf, 3, &req).is_ok());
        for cut in 0..buf.len() {
            assert!(parse(&buf[..cut], 3, &req).is_err(), "cut at {cut}");
        }
        // More entries claimed than the buffer holds.
        assert!(parse(&buf, 4, &req).is_err());
    }
}

#[test]
fn every_damaged_byte_is_survived() {
    // Not every damage is detectable (a changed size is still a size), but none may
    // panic or read out of bounds.
    let buf = batch(&REQUEST, &[file(b"one"), dir(b"two"), Spec { error: 2, ..file(b"three") }]);
    for at in 0..buf.len() {
        for v in [0x00, 0xff, buf[at] ^ 0x80, buf[at].wrapping_add(4)] {
            let mut bad = buf.clone();
            bad[at] = v;
            let _ = parse(&bad, 3, &REQUEST);
        }
    }
    // And pseudo-random buffers.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..2000 {
        let mut bad = buf.clone();
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let at = (x as usize) % bad.len();
            bad[at] = (x >> 32) as u8;
        }
        let _ = parse(&bad, 3, &REQUEST);
    }
}

/// Overwrites the `u32` at `at` in a copy of `buf`.
fn patched(buf: &[u8], at: usize, v: u32) -> Vec<u8> {
    let mut out = buf.to_vec();
    out[at..at + 4].copy_from_slice(&v.to_ne_bytes());
    out
}

/// Just the outcome of a parse, for comparing errors.
fn check(buf: &[u8], count: usize, req: &Request) -> Result<(), Malformed> {
    parse(buf, count, req).map(|_| ())
}

#[test]
fn bad_lengths_and_names_are_errors() {
    let buf = batch(&REQUEST, &[file(b"abc")]);
    // Offsets inside the group: length 0, returned set 4..24, error 24, name ref 28.
    assert_eq!(check(&patched(&buf, 0, 0), 1, &REQUEST), Err(Malformed::GroupLength));
    assert_eq!(check(&patched(&buf, 0, 23), 1, &REQUEST), Err(Malformed::GroupLength));
    assert_eq!(check(&patched(&buf, 0, buf.len() as u32 + 8), 1, &REQUEST), Err(Malformed::Truncated));
    assert_eq!(check(&patched(&buf, 0, u32::MAX), 1, &REQUEST), Err(Malformed::Truncated));
    // A returned attribute that was never requested.
    let returned = u32::from_ne_bytes(buf[4..8].try_into().unwrap());
    assert_eq!(check(&patched(&buf, 4, returned | 0x0000_0004), 1, &REQUEST), Err(Malformed::Unexpected));
    assert_eq!(check(&patched(&buf, 8, 1), 1, &REQUEST), Err(Malformed::Unexpected));
    // No name returned.
    assert_eq!(check(&patched(&buf, 4, returned & !ATTR_CMN_NAME), 1, &REQUEST), Err(Malformed::BadName));
    // Name offset negative, past the group, or far away.
    assert_eq!(check(&patched(&buf, 28, -4i32 as u32), 1, &REQUEST), Err(Malformed::BadName));
    assert_eq!(check(&patched(&buf, 28, buf.len() as u32), 1, &REQUEST), Err(Malformed::Truncated));
    assert_eq!(check(&patched(&buf, 28, i32::MAX as u32), 1, &REQUEST), Err(Malformed::Truncated));
    // Name length: empty, missing its NUL, too long, past the group.
    assert_eq!(check(&patched(&buf, 32, 1), 1, &REQUEST), Err(Malformed::BadName));
    assert_eq!(check(&patched(&buf, 32, 3), 1, &REQUEST), Err(Malformed::BadName));
    assert_eq!(check(&patched(&buf, 32, 5000), 1, &REQUEST), Err(Malformed::BadName));
    assert_eq!(check(&patched(&buf, 32, 900), 1, &REQUEST), Err(Malformed::Truncated));
    // A NUL inside the name.
    let inner = Spec { name: b"a\0b".to_vec(), ..file(b"") };
    assert_eq!(check(&batch(&REQUEST, &[inner]), 1, &REQUEST), Err(Malformed::BadName));
}

#[test]
fn entries_before_a_bad_group_are_delivered() {
    let mut buf = batch(&REQUEST, &[file(b"good")]);
    buf.extend_from_slice(&[0u8; 8]);
    let mut names = Vec::new();
    let r = parse_batch(&buf, 2, &REQUEST, &mut |e| names.push(e.name.to_bytes().to_vec()));
    assert_eq!(r, Err(Malformed::GroupLength));
    assert_eq!(names, [b"good".to_vec()]);
}

#[test]
fn an_empty_batch_is_fine() {
    assert_eq!(parse(&[], 0, &REQUEST).unwrap().len(), 0);
}

/// (name, clones) of every entry.
fn clones_of(buf: &[u8], count: usize, req: &Request) -> Vec<(Vec<u8>, Option<Clones>)> {
    let mut got = Vec::new();
    parse_batch(buf, count, req, &mut |e| got.push((e.name.to_bytes().to_vec(), e.clones))).unwrap();
    got
}

const PACKED_CLONES: Request = Request { pack_invalid: false, ..REQUEST_CLONES };

#[test]
fn clone_attributes_follow_the_file_attributes_and_shift_nothing_before_them() {
    let clone = Spec {
        alloc_bytes: 1 << 20,
        private_bytes: 0,
        clone_id: 0x1234_5678_9abc,
        ext_flags: EF_MAY_SHARE_BLOCKS | EF_SHARES_ALL_BLOCKS,
        ..file(b"clone")
    };
    let edited = Spec {
        alloc_bytes: 1 << 20,
        private_bytes: 16384,
        clone_id: 77,
        ext_flags: EF_MAY_SHARE_BLOCKS,
        ..file(b"edited")
    };
    for req in [REQUEST_CLONES, PACKED_CLONES] {
        let specs = [file(b"plain"), dir(b"sub"), clone.clone(), edited.clone()];
        let buf = batch(&req, &specs);
        let got = parse(&buf, 4, &req).unwrap();
        // The metadata reads as without the clone attributes.
        assert_eq!(complete(&got[0].2).blocks, 8);
        assert_eq!(complete(&got[1].2).size, 96);
        assert_eq!(complete(&got[2].2).blocks, 2048);
        let c = clones_of(&buf, 4, &req);
        assert_eq!(c[0].1, Some(Clones { private_bytes: 4096, clone_id: 0, ext_flags: 0 }));
        assert_eq!(c[1].1, None, "directories have no clone figures");
        let full = c[2].1.unwrap();
        assert_eq!((full.private_bytes, full.clone_id), (0, 0x1234_5678_9abc));
        assert!(full.full_clone());
        let part = c[3].1.unwrap();
        assert_eq!((part.private_bytes, part.clone_id, part.full_clone()), (16384, 77, false));
    }
}

#[test]
fn clone_attributes_not_returned_are_not_figures() {
    // A file system without clones (HFS+) returns none of them: no figures, the
    // metadata stays complete. Without the private size there is nothing to count;
    // without the id or flags the file is not a full clone.
    let none = Spec { missing: AttrSet { fork: REQUEST_CLONES.attrs.fork, ..AttrSet::default() }, ..file(b"hfs") };
    let no_id = Spec {
        clone_id: 9,
        ext_flags: EF_SHARES_ALL_BLOCKS,
        missing: AttrSet { fork: ATTR_CMNEXT_CLONEID, ..AttrSet::default() },
        ..file(b"no-id")
    };
    for req in [REQUEST_CLONES, PACKED_CLONES] {
        let buf = batch(&req, &[none.clone(), no_id.clone(), file(b"after")]);
        let got = parse(&buf, 3, &req).unwrap();
        assert!(got.iter().all(|g| matches!(g.2, Status::Complete(_))));
        let c = clones_of(&buf, 3, &req);
        assert_eq!(c[0].1, None);
        let no_id = c[1].1.unwrap();
        assert_eq!((no_id.clone_id, no_id.full_clone()), (0, false));
        assert_eq!(c[2].1, Some(Clones { private_bytes: 4096, clone_id: 0, ext_flags: 0 }));
    }
    // Asked without the clone attributes, the listing gives no figures.
    let c = clones_of(&batch(&REQUEST, &[file(b"x")]), 1, &REQUEST);
    assert_eq!(c[0].1, None);
}

#[test]
fn clone_attributes_that_were_not_asked_for_are_an_error() {
    let buf = batch(&REQUEST_CLONES, &[file(b"x")]);
    assert_eq!(parse(&buf, 1, &REQUEST).unwrap_err(), Malformed::Unexpected);
}
