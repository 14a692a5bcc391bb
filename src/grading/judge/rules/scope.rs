//! What a rule is given for one client and one notification ([`Scope`]: its connections, the
//! close, the receipts, the successors), and the small measures rules share.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use crate::grading::judge::verdicts::MovingGrade;
use crate::observe::evidence::{Connection, Notification, Observations, Side};

/// One client's connections and one notification, with what follows from them.
pub struct Scope<'a> {
    pub obs: &'a Observations,
    pub index: usize,
    pub n: &'a Notification,
    pub members: Vec<&'a Connection>,
    /// The MOVING's figures, for a MOVING.
    pub moving: Option<&'a MovingGrade>,
    /// How the connections open at the notification (or opened after) stand on the opt-in.
    pub opt_in: OptInCounts,
}

/// The opt-in of a client's connections, counted: those that never asked (a handshake seen
/// without `CLIENT MAINT_NOTIFICATIONS ON`), those that asked and were refused by the server,
/// and those whose handshake was not seen whole. Accepted ones are not counted here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OptInCounts {
    pub never: usize,
    pub refused: usize,
    pub unknown: usize,
}

impl Scope<'_> {
    pub fn retiring(&self, server: SocketAddr) -> bool {
        self.n.retiring.contains(&server)
    }

    /// When the server closed this retiring address after the notification.
    pub fn close_of(&self, server: SocketAddr) -> Option<f64> {
        if !self.retiring(server) {
            return None;
        }
        self.obs
            .closes
            .iter()
            .filter(|c| c.server == server && c.at >= self.n.at)
            .map(|c| c.at)
            .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.min(t))))
    }

    /// The first node-wide close of a retiring address.
    pub fn close(&self) -> Option<f64> {
        self.n
            .retiring
            .iter()
            .filter_map(|s| self.close_of(*s))
            .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.min(t))))
    }

    /// This connection was still open on a retiring address when the server closed it.
    pub fn cut(&self, c: &Connection) -> bool {
        self.close_of(c.server).is_some_and(|close| {
            c.opened < close
                && c.closed
                    .is_none_or(|x| x.at >= close && x.by == Side::Server)
        })
    }

    /// When the connection received this notification (its first copy).
    pub fn receipt(&self, c: &Connection) -> Option<f64> {
        c.received
            .iter()
            .filter(|r| r.notification == self.index)
            .map(|r| r.at)
            .next()
    }

    pub fn receivers(&self) -> Vec<(&Connection, f64)> {
        let mut r: Vec<(&Connection, f64)> = self
            .members
            .iter()
            .filter_map(|c| self.receipt(c).map(|t| (*c, t)))
            .collect();
        r.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.id.cmp(&b.0.id)));
        r
    }

    /// Each receiver's successor: the earliest connection of the client opened after its
    /// receipt and not already another's, taken in order of receipt.
    pub fn successors(&self) -> Vec<(&Connection, f64, Option<&Connection>)> {
        let mut opened: Vec<&Connection> = self.members.clone();
        opened.sort_by(|a, b| a.opened.total_cmp(&b.opened).then(a.id.cmp(&b.id)));
        let mut taken = BTreeSet::new();
        self.receivers()
            .into_iter()
            .map(|(c, at)| {
                let next = opened
                    .iter()
                    .find(|s| s.id != c.id && s.opened >= at && !taken.contains(&s.id))
                    .copied();
                if let Some(s) = next {
                    taken.insert(s.id);
                }
                (c, at, next)
            })
            .collect()
    }
}

/// `+7.5 s after`, or `0.2 s before`.
pub fn offset(d: f64) -> String {
    if d < 0.0 {
        format!("{:.1} s before", -d)
    } else {
        format!("+{d:.1} s after")
    }
}

pub fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// When the client process ended on its own other than with exit 0: the moment it died.
pub fn died_at(obs: &Observations) -> Option<f64> {
    let p = obs.client_process.as_ref()?;
    (!p.stopped && p.exit_code != Some(0)).then_some(p.at)
}

/// The earliest of some times.
pub fn earliest(times: impl Iterator<Item = f64>) -> Option<f64> {
    times.fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.min(t))))
}
