//! Unit tests of the zone code: POSIX strings and zone files built in memory, checked
//! against what glibc 2.36's `localtime_r` printed for the same input (noted per case).

use super::*;
