//! The one wrapper the simulator's Linux system calls share: a C return value turned into an
//! `io::Result`. The private resolv.conf of a client, the namespaces of an unprivileged run and
//! the packet capture each make raw calls that report failure as `-1` and `errno`; one function
//! says how that becomes an error, so the three cannot drift apart.

use std::io;

/// `Ok(r)` for a successful call, else the error `errno` names.
pub(crate) fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}
