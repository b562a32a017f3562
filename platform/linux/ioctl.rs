//! One ioctl call on a caller-owned argument of `u64` words, for `btrfs.rs` and
//! `dupes.rs`: the tree searches, INO_LOOKUP, LOGICAL_INO, FS_INFO, FIEMAP,
//! FIDEDUPERANGE and GET_SUBVOL_INFO all take a struct that the callers lay out in a
//! `[u64]` they size themselves (8-byte aligned; u32/u16 fields packed into the words in
//! native byte order), so the kernel never reads or writes past it.

use super::unix::dir::errno;
use crate::meta::Errno;
use rustix::fd::BorrowedFd;

/// The argument of one call: `buf` is the whole struct the opcode takes.
struct RawIoctl<'a> {
    opcode: rustix::ioctl::Opcode,
    buf: &'a mut [u64],
}

// SAFETY: `as_ptr` points at `buf`, which every caller sizes for the whole argument of its
// opcode, array elements included: the search args' head plus the `buf_size` bytes they
// announce, INO_LOOKUP's 4096 bytes, LOGICAL_INO's 56 (whose container address points at
// a buffer of the size announced, alive for the call), FIEMAP's header plus
// `fm_extent_count` extents, FIDEDUPERANGE's header plus `dest_count` destinations. The
// output is just the return value.
unsafe impl rustix::ioctl::Ioctl for RawIoctl<'_> {
    type Output = ();
    const IS_MUTATING: bool = true;
    fn opcode(&self) -> rustix::ioctl::Opcode {
        self.opcode
    }
    fn as_ptr(&mut self) -> *mut core::ffi::c_void {
        self.buf.as_mut_ptr().cast()
    }
    unsafe fn output_from_ptr(
        _out: rustix::ioctl::IoctlOutput,
        _ptr: *mut core::ffi::c_void,
    ) -> rustix::io::Result<()> {
        Ok(())
    }
}

/// `ioctl(fd, opcode, buf)`. Callers in this backend only: `buf` must hold the whole
/// argument of `opcode`, laid out as the kernel's struct.
pub fn ioctl(fd: BorrowedFd<'_>, opcode: u32, buf: &mut [u64]) -> Result<(), Errno> {
    // SAFETY: see `RawIoctl`: `buf` holds the whole argument of `opcode` as the callers
    // lay it out.
    unsafe { rustix::ioctl::ioctl(fd, RawIoctl { opcode: opcode as _, buf }) }.map_err(errno)
}
