//! Grading an unmodified client without root: the whole run in namespaces of its own.
//!
//! An unmodified client resolves the simulator's host name only through an `/etc/resolv.conf`
//! naming the simulator's DNS, and a resolv.conf cannot name a port: the DNS must answer on port
//! 53, which an ordinary user (a CI runner's account) may not bind. Where that bind is refused,
//! and only then, the process moves itself, before its runtime starts, into a user, network and
//! mount namespace of its own, as `unshare -r -n -m` does: inside, it is root of a loopback of
//! its own, so the simulator, its DNS on port 53, a spawned redis-server and the client all sit
//! together, and the client's private resolv.conf is made as it is for root. Nothing on the
//! machine changes, and the namespaces end with the process.
//!
//! The price: a tcpdump on the machine sees none of the run's traffic, a server on the machine's
//! own loopback (`--upstream ADDRESS`) cannot be reached, and a watch in another terminal cannot
//! reach the simulator. So the namespace is entered only when port 53 is refused and the run
//! needs nothing outside, the screen says so, and `simulate --pcap FILE` captures inside.
//!
//! Where neither way works (user namespaces refused, as a container's seccomp profile may), the
//! client gets the simulator's address in its environment only; [`refused`] says why, and the
//! grade marks what needs DNS NOT JUDGED.

use std::sync::OnceLock;

/// How this process gives a client the simulator's DNS on port 53.
#[derive(Debug, Clone, PartialEq)]
pub enum Isolation {
    /// Port 53 can be served on the machine's loopback (root, or CAP_NET_BIND_SERVICE).
    Host,
    /// The process sits in a user, network and mount namespace of its own.
    Namespace,
    /// Neither: why, in a few words, and what to do.
    Refused(String),
}

static CHOSEN: OnceLock<Isolation> = OnceLock::new();

/// The way chosen by [`prepare`]; `Host` when it was not called (a run without a client).
pub fn chosen() -> Isolation {
    CHOSEN.get().cloned().unwrap_or(Isolation::Host)
}

/// The one line a run in the namespace prints, so that nobody looks for its traffic outside.
pub const NAMESPACE_NOTE: &str = "port 53 is refused to this user, so this run sits in a user, \
network and mount namespace of its own (as `unshare -r -n -m`): a tcpdump or a watch outside sees \
nothing of it; `simulate --pcap FILE` captures inside";

/// Why a run that needed the namespace could not have it, or `None`.
pub fn refused() -> Option<String> {
    match chosen() {
        Isolation::Refused(why) => Some(why),
        _ => None,
    }
}

/// Chooses, once, how the client will get port 53. Must be called while the process has one
/// thread (the kernel refuses a user namespace to a threaded process): before the runtime.
/// `outside` names what the run needs from the machine's network (`--upstream ADDRESS`), which a
/// namespace would cut off.
pub fn prepare(outside: Option<&str>) -> Isolation {
    CHOSEN.get_or_init(|| choose(outside)).clone()
}

/// Moves this process, while it has one thread, into a network and mount namespace of its own
/// (with a user namespace when it may not make them itself): a `certify --jobs N` worker, so
/// that its scenario's loopback, ports, DNS, redis-server and client are reachable by no other
/// scenario. Where it cannot, the worker stays on the machine's loopback, where its ports are
/// still its own (each picked free), and [`prepare`] chooses as for any run.
pub fn own_network() -> bool {
    imp::enter_network().is_ok()
}

fn choose(outside: Option<&str>) -> Isolation {
    let why = match imp::port_53_refused() {
        None => return Isolation::Host,
        Some(why) => why,
    };
    if let Some(what) = outside {
        return Isolation::Refused(format!(
            "{why}, and a namespace of its own would cut this run off from {what}: run as root, \
             give the binary CAP_NET_BIND_SERVICE, or use --upstream spawn"
        ));
    }
    match imp::enter() {
        Ok(()) => Isolation::Namespace,
        Err(e) => Isolation::Refused(format!(
            "{why}, and user namespaces are refused here ({e}): run as root, give the binary \
             CAP_NET_BIND_SERVICE (setcap cap_net_bind_service+ep), or allow unprivileged user \
             namespaces (a container's seccomp profile may forbid them)"
        )),
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io;
    use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};

    use crate::simulator::sim::os::check;

    /// Why port 53 cannot be served on the machine's loopback, or `None` when it can. A port
    /// already taken on one address says nothing: the simulator tries others.
    pub fn port_53_refused() -> Option<String> {
        for n in 1..=254 {
            let addr = SocketAddrV4::new(Ipv4Addr::new(127, 0, 53, n), 53);
            match UdpSocket::bind(addr) {
                Ok(_) => return None,
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
                Err(e) => return Some(format!("cannot serve DNS on {addr} ({e})")),
            }
        }
        None
    }

    /// A new network and mount namespace; a user namespace first when the process lacks the
    /// right to make them (an ordinary user).
    pub fn enter_network() -> io::Result<()> {
        // SAFETY: unshare with constant flags; the process has one thread.
        if unsafe { libc::unshare(libc::CLONE_NEWNET | libc::CLONE_NEWNS) } < 0 {
            return enter();
        }
        private_mounts()?;
        loopback_up()
    }

    /// Moves this process into new user, network and mount namespaces, maps this user to root
    /// inside (so the programs it starts keep the namespace's capabilities, as with
    /// `unshare -r`), and brings the new loopback up.
    pub fn enter() -> io::Result<()> {
        // SAFETY: plain reads of the process's ids.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        // SAFETY: unshare with constant flags; the process has one thread.
        check(unsafe {
            libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET | libc::CLONE_NEWNS)
        })?;
        std::fs::write("/proc/self/setgroups", "deny")?;
        std::fs::write("/proc/self/uid_map", format!("0 {uid} 1"))?;
        std::fs::write("/proc/self/gid_map", format!("0 {gid} 1"))?;
        private_mounts()?;
        loopback_up()
    }

    /// Private, so that no mount made inside can propagate to the machine.
    fn private_mounts() -> io::Result<()> {
        // SAFETY: mount with NUL-terminated constant strings and null pointers where allowed.
        check(unsafe {
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_PRIVATE | libc::MS_REC,
                std::ptr::null(),
            )
        })
        .map(|_| ())
    }

    /// A new network namespace has a loopback, down; up, it answers all of 127.0.0.0/8.
    fn loopback_up() -> io::Result<()> {
        // SAFETY: a socket used only for the two ioctls below, closed at the end; `ifr` is a
        // zeroed ifreq whose name is "lo".
        unsafe {
            let fd = check(libc::socket(
                libc::AF_INET,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                0,
            ))?;
            let mut ifr: libc::ifreq = std::mem::zeroed();
            for (d, s) in ifr.ifr_name.iter_mut().zip(b"lo") {
                *d = *s as libc::c_char;
            }
            let r = (|| {
                check(libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr))?;
                ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
                check(libc::ioctl(fd, libc::SIOCSIFFLAGS, &ifr))
            })();
            libc::close(fd);
            r.map(|_| ())
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub fn port_53_refused() -> Option<String> {
        Some("private resolvers are Linux-only".into())
    }

    pub fn enter() -> std::io::Result<()> {
        Err(std::io::Error::other("namespaces are Linux-only"))
    }

    pub fn enter_network() -> std::io::Result<()> {
        enter()
    }
}
