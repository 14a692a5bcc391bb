//! Reading a scenario file: a statement per line into a draft, then the whole file checked
//! (required lines, addresses that are proxies, steps before the end) and made a
//! [`Scenario`]. Kept apart from the format's types ([`super::format`]) so that the types read
//! alone; every error names the file, the line and the field.

use std::net::{IpAddr, Ipv4Addr};

use super::super::notation::unescape;
use crate::protocol::resp::{Frame, Scan, Scanner};
use crate::simulator::sim::azure_channel;

use super::format::{
    Action, ClusterNode, Endpoint, Hostile, Mode, Push, PushKind, Scenario, ScenarioError,
    SlotMove, Start, Step, StructuredPush, To,
};

impl Scenario {
    /// Parses a scenario file. `file` is only used in error messages.
    pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
        Parser {
            file,
            line: 0,
            field: None,
        }
        .parse(text)
    }
}

/// What the statements of a file have said so far; [`Parser::finish`] makes it a scenario.
struct Draft {
    name: Option<String>,
    about: Option<String>,
    proxies: Option<Vec<Ipv4Addr>>,
    initially_down: Vec<Ipv4Addr>,
    dns: Option<Vec<IpAddr>>,
    ttl: u32,
    start: Start,
    mode: Mode,
    silent: bool,
    catch_up: bool,
    first_seq: i64,
    cluster: Vec<ClusterNode>,
    steps: Vec<Step>,
    end: Option<f64>,
    spublish: Option<(usize, f64)>,
}

impl Default for Draft {
    /// The settings' defaults (scenarios/README.md, "Settings").
    fn default() -> Draft {
        Draft {
            name: None,
            about: None,
            proxies: None,
            initially_down: Vec::new(),
            dns: None,
            ttl: 5,
            start: Start::OptIn(1),
            mode: Mode::Enterprise,
            silent: false,
            catch_up: true,
            first_seq: 0,
            cluster: Vec::new(),
            steps: Vec::new(),
            end: None,
            spublish: None,
        }
    }
}

pub(super) struct Parser<'f> {
    pub(super) file: &'f str,
    pub(super) line: usize,
    pub(super) field: Option<String>,
}

/// Strips a comment: `#` at the start of the line or after whitespace (so `#` inside a raw
/// frame such as `#t` is kept).
pub(super) fn strip_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'#' && (i == 0 || bytes[i - 1].is_ascii_whitespace()) {
            return &line[..i];
        }
    }
    line
}

impl Parser<'_> {
    pub(super) fn err(&self, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.file.to_string(),
            line: (self.line > 0).then_some(self.line),
            field: self.field.clone(),
            message: message.into(),
        }
    }

    pub(super) fn whole_file_err(&self, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.file.to_string(),
            line: None,
            field: None,
            message: message.into(),
        }
    }

    pub(super) fn field(&mut self, name: &str) {
        self.field = Some(name.to_string());
    }

    pub(super) fn parse(mut self, text: &str) -> Result<Scenario, ScenarioError> {
        let mut d = Draft::default();
        for (i, raw_line) in text.lines().enumerate() {
            self.line = i + 1;
            self.field = None;
            let line = strip_comment(raw_line).trim();
            if line.is_empty() {
                continue;
            }
            let (keyword, rest) = split_word(line);
            self.field(keyword);
            self.statement(&mut d, keyword, rest)?;
        }
        self.finish(d)
    }

    /// One statement of the file, into the draft.
    fn statement(&mut self, d: &mut Draft, keyword: &str, rest: &str) -> Result<(), ScenarioError> {
        match keyword {
            "name" => set_once(self, &mut d.name, self.name(rest)?)?,
            "about" => {
                if rest.is_empty() {
                    return Err(self.err("expected one line of text"));
                }
                set_once(self, &mut d.about, rest.to_string())?;
            }
            "proxies" => set_once(self, &mut d.proxies, self.proxies(rest)?)?,
            "down" => d
                .initially_down
                .push(self.proxy(self.one_word(rest, "an address")?)?),
            "dns" => set_once(self, &mut d.dns, self.addr_list(rest)?)?,
            "ttl" => d.ttl = self.ttl(rest)?,
            "start" => d.start = self.start(rest)?,
            "mode" => (d.mode, d.silent) = self.mode(rest)?,
            "catch-up" => {
                d.catch_up = match self.one_word(rest, "on or off")? {
                    "on" => true,
                    "off" => false,
                    other => return Err(self.err(format!("expected on or off, found {other:?}"))),
                }
            }
            "seq" => {
                d.first_seq =
                    self.number::<i64>(self.one_word(rest, "an integer")?, "an integer")?
            }
            "node" => {
                let (addr, slots) = split_word(rest);
                let addr = self.proxy(addr)?;
                let slots = self.slot_list(slots)?;
                d.cluster.push(ClusterNode { addr, slots });
            }
            "at" => d.steps.push(self.step(rest)?),
            "spublish" => {
                let every = (self.line, self.every(rest)?);
                set_once(self, &mut d.spublish, every)?;
            }
            "end" => {
                let t = self.seconds(self.one_word(rest, "seconds")?)?;
                set_once(self, &mut d.end, t)?;
            }
            other => {
                self.field = None;
                return Err(self.err(format!(
                    "unknown keyword {other:?} (expected name, about, proxies, down, dns, ttl, \
                     start, mode, catch-up, seq, node, spublish, at or end)"
                )));
            }
        }
        Ok(())
    }

    /// `name NAME`: letters, digits, `-` and `_`.
    fn name(&self, rest: &str) -> Result<String, ScenarioError> {
        let n = self.one_word(rest, "a scenario name")?;
        if !n
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(self.err(format!("expected letters, digits, '-' or '_', found {n:?}")));
        }
        Ok(n.to_string())
    }

    /// `proxies IP ...`: at least one, none twice.
    fn proxies(&self, rest: &str) -> Result<Vec<Ipv4Addr>, ScenarioError> {
        let list = self.proxy_list(rest)?;
        if list.is_empty() {
            return Err(self.err("expected at least one loopback address"));
        }
        for (j, a) in list.iter().enumerate() {
            if list[..j].contains(a) {
                return Err(self.err(format!("{a} is listed twice")));
            }
        }
        Ok(list)
    }

    /// `ttl SECONDS`: a whole number, not 0.
    fn ttl(&self, rest: &str) -> Result<u32, ScenarioError> {
        let ttl =
            self.number::<u32>(self.one_word(rest, "seconds")?, "a whole number of seconds")?;
        if ttl == 0 {
            return Err(self.err("a TTL of 0 would defeat every resolver; use 1 or more"));
        }
        Ok(ttl)
    }

    /// `start now | connect | subscribe | opt-in [N [ssubscribe]]`.
    fn start(&self, rest: &str) -> Result<Start, ScenarioError> {
        let mut words = rest.split_whitespace();
        Ok(match (words.next(), words.next(), words.next()) {
            (Some("now"), None, _) => Start::Now,
            (Some("connect"), None, _) => Start::Connect,
            (Some("subscribe"), None, _) => Start::Subscribe,
            (Some("opt-in"), None, _) => Start::OptIn(1),
            (Some("opt-in"), Some(n), more) => {
                let n: usize = self.number(n, "a number of connections")?;
                if n == 0 {
                    return Err(self.err("expected 1 or more connections, found 0"));
                }
                match (more, words.next()) {
                    (None, _) => Start::OptIn(n),
                    (Some("ssubscribe"), None) => Start::OptInSsubscribe(n),
                    _ => {
                        return Err(self.err(format!(
                            "expected opt-in N or opt-in N ssubscribe, found {rest:?}"
                        )))
                    }
                }
            }
            _ => {
                return Err(self.err(format!(
                    "expected now, connect, opt-in, opt-in N, opt-in N ssubscribe or subscribe, found {rest:?}"
                )))
            }
        })
    }

    /// `mode enterprise | refusing | silent`: the mode, and whether it is silent.
    fn mode(&self, rest: &str) -> Result<(Mode, bool), ScenarioError> {
        match self.one_word(rest, "enterprise, refusing or silent")? {
            "enterprise" => Ok((Mode::Enterprise, false)),
            "refusing" => Ok((Mode::Refusing, false)),
            "silent" => Ok((Mode::Enterprise, true)),
            other => Err(self.err(format!(
                "expected enterprise, refusing or silent, found {other:?}"
            ))),
        }
    }

    /// The draft of a whole file: its required lines there, its addresses and steps consistent,
    /// the sharded publications added as steps.
    fn finish(mut self, d: Draft) -> Result<Scenario, ScenarioError> {
        let name = d
            .name
            .ok_or_else(|| self.whole_file_err("no 'name' line"))?;
        let about = d
            .about
            .ok_or_else(|| self.whole_file_err("no 'about' line"))?;
        let proxies = d
            .proxies
            .ok_or_else(|| self.whole_file_err("no 'proxies' line"))?;
        let dns = d.dns.ok_or_else(|| self.whole_file_err("no 'dns' line"))?;
        let end = d.end.ok_or_else(|| self.whole_file_err("no 'end' line"))?;
        self.check_addresses(&proxies, &d.initially_down, &d.cluster)?;
        self.check_steps(&proxies, &d.cluster, &d.steps, end)?;
        let mut steps = d.steps;
        if let Some((line, every)) = d.spublish {
            self.line = line;
            self.field("spublish");
            if d.cluster.is_empty() {
                return Err(self.err("'spublish' needs a cluster topology ('node' lines)"));
            }
            steps.extend(publish_ticks(line, every, end).map_err(|why| self.err(why))?);
        }
        steps.sort_by(|a, b| a.at.total_cmp(&b.at));
        Ok(Scenario {
            name,
            about,
            source: self.file.to_string(),
            proxies,
            initially_down: d.initially_down,
            dns,
            ttl: d.ttl,
            start: d.start,
            mode: d.mode,
            silent: d.silent,
            catch_up: d.catch_up,
            first_seq: d.first_seq,
            cluster: d.cluster,
            steps,
            end,
        })
    }

    /// Every `down` and `node` address is one of the proxies.
    fn check_addresses(
        &self,
        proxies: &[Ipv4Addr],
        down: &[Ipv4Addr],
        cluster: &[ClusterNode],
    ) -> Result<(), ScenarioError> {
        for a in down {
            if !proxies.contains(a) {
                return Err(
                    self.whole_file_err(format!("'down {a}': {a} is not one of the proxies"))
                );
            }
        }
        for node in cluster {
            if !proxies.contains(&node.addr) {
                return Err(
                    self.whole_file_err(format!("'node {}': not one of the proxies", node.addr))
                );
            }
        }
        Ok(())
    }

    /// Each step before the end and on a known proxy, reported at the line that breaks it.
    fn check_steps(
        &mut self,
        proxies: &[Ipv4Addr],
        cluster: &[ClusterNode],
        steps: &[Step],
        end: f64,
    ) -> Result<(), ScenarioError> {
        for step in steps {
            self.line = step.line;
            self.field = None;
            if step.at > end {
                self.field("at");
                return Err(self.err(format!("{} s is after the end ({end} s)", step.at)));
            }
            let proxy = match &step.action {
                Action::Push { to: To::One(p), .. }
                | Action::Hostile { to: To::One(p), .. }
                | Action::Azure { to: To::One(p), .. }
                | Action::Close { proxy: p, .. }
                | Action::Down(p)
                | Action::Up(p) => Some(*p),
                Action::Assign { node, .. } => {
                    if cluster.is_empty() {
                        return Err(self.err("'assign' needs a cluster topology ('node' lines)"));
                    }
                    Some(*node)
                }
                _ => None,
            };
            if let Some(p) = proxy.filter(|p| !proxies.contains(p)) {
                return Err(self.err(format!("{p} is not one of the proxies")));
            }
        }
        Ok(())
    }

    pub(super) fn one_word<'t>(&self, rest: &'t str, what: &str) -> Result<&'t str, ScenarioError> {
        let mut words = rest.split_whitespace();
        match (words.next(), words.next()) {
            (Some(w), None) => Ok(w),
            (None, _) => Err(self.err(format!("expected {what}, found nothing"))),
            (Some(_), Some(extra)) => {
                Err(self.err(format!("expected {what} only, found {extra:?} after it")))
            }
        }
    }

    pub(super) fn number<T: std::str::FromStr>(
        &self,
        word: &str,
        what: &str,
    ) -> Result<T, ScenarioError> {
        word.parse()
            .map_err(|_| self.err(format!("expected {what}, found {word:?}")))
    }

    pub(super) fn seconds(&self, word: &str) -> Result<f64, ScenarioError> {
        let t: f64 = self.number(word, "seconds (a number such as 9.7)")?;
        if !t.is_finite() || t < 0.0 {
            return Err(self.err(format!("expected 0 or more seconds, found {word:?}")));
        }
        Ok(t)
    }

    pub(super) fn proxy(&self, word: &str) -> Result<Ipv4Addr, ScenarioError> {
        let a: Ipv4Addr = self.number(word, "an IPv4 loopback address such as 127.0.0.2")?;
        if !a.is_loopback() {
            return Err(self.err(format!(
                "{a} is not a loopback address: the simulator listens on 127.0.0.0/8 only"
            )));
        }
        Ok(a)
    }

    pub(super) fn proxy_list(&self, rest: &str) -> Result<Vec<Ipv4Addr>, ScenarioError> {
        rest.split_whitespace().map(|w| self.proxy(w)).collect()
    }

    pub(super) fn addr_list(&self, rest: &str) -> Result<Vec<IpAddr>, ScenarioError> {
        rest.split_whitespace()
            .map(|w| self.number(w, "IP addresses"))
            .collect()
    }

    pub(super) fn slot_list(&self, text: &str) -> Result<Vec<(u16, u16)>, ScenarioError> {
        parse_slots(text).map_err(|why| self.err(why))
    }

    /// `spublish every SECONDS`: the interval of the sharded publications, at least 0.1 s.
    pub(super) fn every(&mut self, rest: &str) -> Result<f64, ScenarioError> {
        let (word, rest) = split_word(rest);
        if word != "every" {
            return Err(self.err(format!("expected 'every SECONDS', found {word:?}")));
        }
        let every = self.seconds(self.one_word(rest, "seconds")?)?;
        if every < 0.1 {
            return Err(self.err(format!("publish at most every 0.1 s, found {every}")));
        }
        Ok(every)
    }

    /// `stall (*|IP) SECONDS`: more than 0 and at most 60 seconds, kept in milliseconds.
    pub(super) fn stall(&mut self, rest: &str) -> Result<Action, ScenarioError> {
        let (to, rest) = split_word(rest);
        let to = match to {
            "*" => To::All,
            "" => return Err(self.err("expected a proxy address or '*', found nothing")),
            p => To::One(self.proxy(p)?),
        };
        let secs = self.seconds(self.one_word(rest, "the stall's seconds")?)?;
        if secs <= 0.0 || secs > 60.0 {
            return Err(self.err(format!(
                "a stall lasts more than 0 and at most 60 seconds, found {secs}"
            )));
        }
        Ok(Action::Stall {
            to,
            millis: (secs * 1000.0).round() as u64,
        })
    }

    pub(super) fn step(&mut self, rest: &str) -> Result<Step, ScenarioError> {
        let line = self.line;
        self.field("at");
        let (t, rest) = split_word(rest);
        let at = self.seconds(t)?;
        let (verb, rest) = split_word(rest);
        self.field(verb);
        let action = match verb {
            "push" => {
                let (to, rest) = split_word(rest);
                self.field("push");
                let to = self.to(to)?;
                Action::Push {
                    to,
                    push: self.push(rest)?,
                }
            }
            "dns" => Action::Dns(self.addr_list(rest)?),
            "close" => self.close(rest)?,
            "down" => Action::Down(self.proxy(self.one_word(rest, "an address")?)?),
            "up" => Action::Up(self.proxy(self.one_word(rest, "an address")?)?),
            "assign" => self.assign(rest)?,
            "say" => {
                if rest.is_empty() {
                    return Err(self.err("expected a line of text"));
                }
                Action::Say(rest.to_string())
            }
            "hostile" => self.hostile(rest)?,
            "stall" => self.stall(rest)?,
            "azure" => {
                let (to, rest) = split_word(rest);
                let to = self.to(to)?;
                let message = azure_channel::Message::parse(rest).map_err(|why| self.err(why))?;
                Action::Azure { to, message }
            }
            "optin" => match self.one_word(rest, "accept or refuse")? {
                "accept" => Action::OptIn(true),
                "refuse" => Action::OptIn(false),
                other => {
                    return Err(self.err(format!("expected accept or refuse, found {other:?}")))
                }
            },
            "" => return Err(self.err("expected an action after the time, found nothing")),
            other => {
                self.field = None;
                return Err(self.err(format!(
                    "unknown action {other:?} (expected push, dns, close, down, up, assign, say, \
                     hostile, optin, stall or azure)"
                )));
            }
        };
        Ok(Step { at, line, action })
    }

    /// A step's recipients: `*` or one proxy's address.
    fn to(&self, word: &str) -> Result<To, ScenarioError> {
        match word {
            "*" => Ok(To::All),
            "" => Err(self.err("expected a proxy address or '*', found nothing")),
            p => Ok(To::One(self.proxy(p)?)),
        }
    }

    /// `close PROXY [restart]`.
    fn close(&self, rest: &str) -> Result<Action, ScenarioError> {
        let mut words = rest.split_whitespace();
        let proxy = self.proxy(words.next().unwrap_or(""))?;
        let restart = match words.next() {
            None => false,
            Some("restart") => true,
            Some(other) => {
                return Err(self.err(format!("expected 'restart' or nothing, found {other:?}")))
            }
        };
        if let Some(extra) = words.next() {
            return Err(self.err(format!("unexpected {extra:?}")));
        }
        Ok(Action::Close { proxy, restart })
    }

    /// `assign SLOTS NODE`.
    fn assign(&self, rest: &str) -> Result<Action, ScenarioError> {
        let (slots, node) = split_word(rest);
        let slots = self.slot_list(slots)?;
        if slots.is_empty() {
            return Err(self.err("expected slots such as 8892-8991"));
        }
        let node = self.proxy(self.one_word(node, "a node address")?)?;
        Ok(Action::Assign { slots, node })
    }

    /// `hostile TO KIND`.
    fn hostile(&self, rest: &str) -> Result<Action, ScenarioError> {
        let (to, rest) = split_word(rest);
        let to = self.to(to)?;
        let word = self.one_word(rest, "huge-blob, deep, trickle or mid-frame")?;
        let Some(kind) = Hostile::ALL.into_iter().find(|k| k.name() == word) else {
            return Err(self.err(format!(
                "expected huge-blob, deep, trickle or mid-frame, found {word:?}"
            )));
        };
        Ok(Action::Hostile { to, kind })
    }

    pub(super) fn push(&mut self, rest: &str) -> Result<Push, ScenarioError> {
        let (kind_word, rest) = split_word(rest);
        if kind_word == "raw" {
            return self.raw_push(rest);
        }
        if kind_word == "when" {
            return self.push_when(rest);
        }
        self.field("push");
        let Some(kind) = PushKind::ALL.into_iter().find(|k| k.name() == kind_word) else {
            return Err(self.err(format!(
                "expected a notification type (MOVING, MIGRATING, MIGRATED, FAILING_OVER, \
                 FAILED_OVER, SMIGRATING, SMIGRATED) or 'raw', found {kind_word:?}"
            )));
        };
        let allowed = kind.fields();
        let mut time = None;
        let mut target = None;
        let mut shards = None;
        let mut slots = None;
        let mut moves = Vec::new();
        for word in rest.split_whitespace() {
            let Some((key, value)) = word.split_once('=') else {
                self.field = None;
                return Err(self.err(format!("expected key=value, found {word:?}")));
            };
            self.field(key);
            if !allowed.contains(&key) {
                return Err(self.err(format!(
                    "not a field of {} (it takes {})",
                    kind.name(),
                    allowed.join(", ")
                )));
            }
            let repeated = match key {
                "time" => time
                    .replace(self.number::<i64>(value, "an integer")?)
                    .is_some(),
                "target" => target.replace(self.target(value)?).is_some(),
                "shards" => shards.replace(self.shards(value)?).is_some(),
                "slots" => {
                    self.slot_list(value)?;
                    slots.replace(value.to_string()).is_some()
                }
                "move" => {
                    moves.push(self.slot_move(value)?);
                    false
                }
                _ => unreachable!("checked against the allowed fields"),
            };
            if repeated {
                return Err(self.err("given twice"));
            }
        }
        for &required in allowed {
            let missing = match required {
                "time" => time.is_none(),
                "target" => target.is_none(),
                "shards" => shards.is_none(),
                "slots" => slots.is_none(),
                _ => moves.is_empty(),
            };
            if missing {
                self.field(required);
                return Err(self.err(format!("{} needs it", kind.name())));
            }
        }
        Ok(Push::Structured(StructuredPush {
            kind,
            time,
            target,
            shards,
            slots,
            moves,
        }))
    }

    /// `push raw ...`: escaped bytes that must be exactly one RESP3 push frame; the error says
    /// what was found instead.
    pub(super) fn raw_push(&mut self, rest: &str) -> Result<Push, ScenarioError> {
        self.field("raw");
        let bytes = unescape(rest).map_err(|why| self.err(why))?;
        match Scanner::default().scan(&bytes) {
            Ok(Scan::Frame(Frame::Push(_), n)) if n == bytes.len() => {}
            Ok(Scan::Frame(Frame::Push(_), n)) => {
                return Err(self.err(format!(
                    "{} bytes left over after one push frame of {n} bytes",
                    bytes.len() - n
                )))
            }
            Ok(Scan::Frame(other, _)) => {
                return Err(self.err(format!(
                    "expected a push frame ('>'), found a {}",
                    other.type_name()
                )))
            }
            Ok(Scan::Incomplete { need }) => {
                return Err(self.err(format!(
                    "incomplete frame: {} bytes given, at least {need} needed",
                    bytes.len()
                )))
            }
            Err(e) => return Err(self.err(format!("not a RESP3 frame: {e}"))),
        }
        Ok(Push::Raw(bytes))
    }

    /// A MOVING target: `null`, `asked:<proxy>` (the replacement's address in the client's
    /// own form) or any other text sent as it is.
    pub(super) fn target(&self, value: &str) -> Result<Endpoint, ScenarioError> {
        Ok(match value {
            "null" => Endpoint::Null,
            "" => return Err(self.err("expected null or host:port, found nothing")),
            t => match t.strip_prefix("asked:") {
                Some(ip) => Endpoint::Asked(self.proxy(ip)?),
                None => Endpoint::Text(t.to_string()),
            },
        })
    }

    /// A JSON array of shard id strings, kept as written.
    pub(super) fn shards(&self, value: &str) -> Result<String, ScenarioError> {
        if serde_json::from_str::<Vec<String>>(value).is_err() {
            return Err(self.err(format!(
                "expected a JSON array of id strings such as [\"27\"], found {value:?}"
            )));
        }
        Ok(value.to_string())
    }

    /// `move=source,target,slots`, with the slots checked.
    pub(super) fn slot_move(&self, value: &str) -> Result<SlotMove, ScenarioError> {
        let parts: Vec<&str> = value.splitn(3, ',').collect();
        let [source, target, s] = parts[..] else {
            return Err(self.err(format!(
                "expected source,target,slots (e.g. 127.0.0.3:{{port}},127.0.0.4:{{port}},8892-8991), found {value:?}"
            )));
        };
        self.slot_list(s)?;
        Ok(SlotMove {
            source: source.to_string(),
            target: target.to_string(),
            slots: s.to_string(),
        })
    }
}

pub(super) fn set_once<T>(
    p: &Parser<'_>,
    slot: &mut Option<T>,
    value: T,
) -> Result<(), ScenarioError> {
    if slot.replace(value).is_some() {
        return Err(p.err("given twice"));
    }
    Ok(())
}

/// The first whitespace-separated word and the trimmed rest.
pub(super) fn split_word(text: &str) -> (&str, &str) {
    let text = text.trim();
    match text.find(char::is_whitespace) {
        Some(i) => (&text[..i], text[i..].trim_start()),
        None => (text, ""),
    }
}

/// Most ticks a `spublish` directive may produce: a bound on the steps a file can make.
pub(super) const TICKS_MAX: u64 = 1000;

/// The `spublish` ticks from 0 to the end, one every `every` seconds.
pub(super) fn publish_ticks(line: usize, every: f64, end: f64) -> Result<Vec<Step>, String> {
    let n = (end / every).floor() as u64 + 1;
    if n > TICKS_MAX {
        return Err(format!(
            "every {every} s until {end} s is {n} publications, more than {TICKS_MAX}"
        ));
    }
    Ok((0..n)
        .map(|tick| Step {
            at: tick as f64 * every,
            line,
            action: Action::ShardPublish { tick },
        })
        .collect())
}

/// A slot list: comma-separated `N` or `N-M` items within 0..=16383 (empty items skipped).
pub fn parse_slots(text: &str) -> Result<Vec<(u16, u16)>, String> {
    let slot = |s: &str| -> Result<u16, String> {
        match s.parse::<u16>() {
            Ok(n) if n <= 16383 && s.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
            _ => Err(format!("expected a slot 0..16383, found {s:?}")),
        }
    };
    let mut out = Vec::new();
    for item in text.split(',').filter(|i| !i.is_empty()) {
        let (a, b) = match item.split_once('-') {
            Some((a, b)) => (slot(a)?, slot(b)?),
            None => {
                let n = slot(item)?;
                (n, n)
            }
        };
        if a > b {
            return Err(format!("slot range {item:?} runs backwards"));
        }
        out.push((a, b));
    }
    Ok(out)
}
