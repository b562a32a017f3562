//! The Windows declarations, by hand (see the module doc of `windows/mod.rs` for why):
//! ntdll and kernel32 functions linked with `raw-dylib`, their structures and constants.

use std::ffi::c_void;

// ---------------------------------------------------------------------------------------
// Declarations (winternl.h, ntifs.h, wincon.h, minwinbase.h). HANDLE is kept as `isize`
// so that `Dir` is plainly `Send + Sync`: a kernel handle may be used from any thread.

pub(super) type Handle = isize;
pub(super) type NtStatus = i32;

#[repr(C)]
pub(super) struct UnicodeString {
    pub(super) length_bytes: u16,
    pub(super) maximum_length_bytes: u16,
    pub(super) buffer: *const u16,
}

#[repr(C)]
pub(super) struct ObjectAttributes {
    pub(super) length: u32,
    pub(super) root_directory: Handle,
    pub(super) object_name: *const UnicodeString,
    pub(super) attributes: u32,
    pub(super) security_descriptor: *const c_void,
    pub(super) security_quality_of_service: *const c_void,
}

/// `IO_STATUS_BLOCK`: a status/pointer union and the byte count the call produced.
#[repr(C)]
#[derive(Default)]
pub(super) struct IoStatusBlock {
    pub(super) status: usize,
    pub(super) information: usize,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
pub(super) struct SystemTime {
    pub(super) year: u16,
    pub(super) month: u16,
    pub(super) day_of_week: u16,
    pub(super) day: u16,
    pub(super) hour: u16,
    pub(super) minute: u16,
    pub(super) second: u16,
    pub(super) milliseconds: u16,
}

#[repr(C)]
pub(super) struct TimeZoneInformation {
    pub(super) bias_minutes: i32,
    pub(super) standard_name: [u16; 32],
    pub(super) standard_date: SystemTime,
    pub(super) standard_bias_minutes: i32,
    pub(super) daylight_name: [u16; 32],
    pub(super) daylight_date: SystemTime,
    pub(super) daylight_bias_minutes: i32,
}

/// `INPUT_RECORD`: the event type, then a union read as UTF-16-sized words. For a
/// `KEY_EVENT_RECORD`: words 0-1 `bKeyDown`, 2 `wRepeatCount`, 5 `uChar`.
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub(super) struct InputRecord {
    pub(super) event_type: u16,
    pub(super) event: [u16; 9],
}

#[repr(C)]
#[derive(Default)]
pub(super) struct ConsoleScreenBufferInfo {
    pub(super) size: [i16; 2],
    pub(super) cursor_position: [i16; 2],
    pub(super) attributes: u16,
    /// Left, top, right, bottom of the visible window, inclusive.
    pub(super) window: [i16; 4],
    pub(super) maximum_window_size: [i16; 2],
}

#[link(name = "ntdll", kind = "raw-dylib")]
extern "system" {
    pub(super) fn NtOpenFile(
        handle: *mut Handle,
        access: u32,
        attributes: *const ObjectAttributes,
        io: *mut IoStatusBlock,
        share: u32,
        options: u32,
    ) -> NtStatus;
    pub(super) fn NtQueryDirectoryFile(
        handle: Handle,
        event: Handle,
        apc_routine: *const c_void,
        apc_context: *const c_void,
        io: *mut IoStatusBlock,
        buffer: *mut c_void,
        length: u32,
        class: u32,
        return_single_entry: u8,
        file_name: *const UnicodeString,
        restart_scan: u8,
    ) -> NtStatus;
    pub(super) fn NtQueryInformationFile(
        handle: Handle,
        io: *mut IoStatusBlock,
        buffer: *mut c_void,
        length: u32,
        class: u32,
    ) -> NtStatus;
    pub(super) fn NtQueryVolumeInformationFile(
        handle: Handle,
        io: *mut IoStatusBlock,
        buffer: *mut c_void,
        length: u32,
        class: u32,
    ) -> NtStatus;
    pub(super) fn NtSetInformationFile(
        handle: Handle,
        io: *mut IoStatusBlock,
        buffer: *mut c_void,
        length: u32,
        class: u32,
    ) -> NtStatus;
    pub(super) fn NtClose(handle: Handle) -> NtStatus;
    pub(super) fn RtlNtStatusToDosError(status: NtStatus) -> u32;
}

#[link(name = "kernel32", kind = "raw-dylib")]
extern "system" {
    pub(super) fn CreateFileW(
        name: *const u16,
        access: u32,
        share: u32,
        security: *const c_void,
        disposition: u32,
        flags: u32,
        template: Handle,
    ) -> Handle;
    pub(super) fn WaitForSingleObject(handle: Handle, timeout_ms: u32) -> u32;
    pub(super) fn GetNumberOfConsoleInputEvents(console: Handle, count: *mut u32) -> i32;
    pub(super) fn ReadConsoleInputW(console: Handle, records: *mut InputRecord, length: u32, read: *mut u32) -> i32;
    pub(super) fn WriteConsoleW(
        console: Handle,
        text: *const u16,
        length: u32,
        written: *mut u32,
        reserved: *const c_void,
    ) -> i32;
    pub(super) fn GetConsoleMode(console: Handle, mode: *mut u32) -> i32;
    pub(super) fn SetConsoleMode(console: Handle, mode: u32) -> i32;
    pub(super) fn GetConsoleScreenBufferInfo(console: Handle, info: *mut ConsoleScreenBufferInfo) -> i32;
    pub(super) fn FileTimeToSystemTime(file_time: *const u64, out: *mut SystemTime) -> i32;
    pub(super) fn SystemTimeToFileTime(time: *const SystemTime, out: *mut u64) -> i32;
    pub(super) fn SystemTimeToTzSpecificLocalTime(
        zone: *const TimeZoneInformation,
        utc: *const SystemTime,
        local: *mut SystemTime,
    ) -> i32;
    pub(super) fn GetTimeZoneInformation(out: *mut TimeZoneInformation) -> u32;
}

pub(super) const FILE_LIST_DIRECTORY: u32 = 0x0001;
pub(super) const FILE_READ_DATA: u32 = 0x0001;
pub(super) const FILE_READ_ATTRIBUTES: u32 = 0x0080;
pub(super) const DELETE: u32 = 0x0001_0000;
pub(super) const SYNCHRONIZE: u32 = 0x0010_0000;
pub(super) const FILE_SHARE_ALL: u32 = 0x1 | 0x2 | 0x4;
pub(super) const FILE_DIRECTORY_FILE: u32 = 0x0001;
pub(super) const FILE_SYNCHRONOUS_IO_NONALERT: u32 = 0x0020;
pub(super) const FILE_NON_DIRECTORY_FILE: u32 = 0x0040;
pub(super) const FILE_OPEN_FOR_BACKUP_INTENT: u32 = 0x4000;
pub(super) const FILE_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
pub(super) const OBJ_CASE_INSENSITIVE: u32 = 0x40;

pub(super) const FILE_BASIC_INFORMATION: u32 = 4;
pub(super) const FILE_STANDARD_INFORMATION: u32 = 5;
pub(super) const FILE_INTERNAL_INFORMATION: u32 = 6;
pub(super) const FILE_DISPOSITION_INFORMATION: u32 = 13;
pub(super) const FILE_ATTRIBUTE_TAG_INFORMATION: u32 = 35;
pub(super) const FILE_ID_FULL_DIRECTORY_INFORMATION: u32 = 38;
pub(super) const FILE_FS_VOLUME_INFORMATION: u32 = 1;
pub(super) const FILE_FS_ATTRIBUTE_INFORMATION: u32 = 5;

pub(super) const FILE_ATTRIBUTE_DIRECTORY: u32 = 0x10;
pub(super) const FILE_ATTRIBUTE_DEVICE: u32 = 0x40;
pub(super) const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x400;
pub(super) const REPARSE_TAG_NAME_SURROGATE: u32 = 0x2000_0000;
pub(super) const FILE_SUPPORTS_HARD_LINKS: u32 = 0x0040_0000;

pub(super) const STATUS_BUFFER_OVERFLOW: NtStatus = 0x8000_0005_u32 as i32;
pub(super) const STATUS_NO_MORE_FILES: NtStatus = 0x8000_0006_u32 as i32;
pub(super) const STATUS_NO_SUCH_FILE: NtStatus = 0xC000_000F_u32 as i32;

pub(super) const ERROR_FILE_NOT_FOUND: i32 = 2;
pub(super) const ERROR_INVALID_HANDLE: i32 = 6;
pub(super) const ERROR_INVALID_DATA: i32 = 13;
pub(super) const ERROR_WRITE_FAULT: i32 = 29;
pub(super) const ERROR_NOT_SUPPORTED: i32 = 50;
pub(super) const ERROR_INVALID_NAME: i32 = 123;
pub(super) const ERROR_FILENAME_EXCED_RANGE: i32 = 206;
pub(super) const ERROR_DIRECTORY_NOT_SUPPORTED: i32 = 336;
pub(super) const ERROR_MR_MID_NOT_FOUND: u32 = 317;

/// 100 ns ticks between 1601-01-01 (FILETIME) and 1970-01-01 (Unix), in seconds.
pub(super) const SECS_1601_TO_1970: i64 = 11_644_473_600;
