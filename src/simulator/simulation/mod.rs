//! One scenario played to a client command: the spawned upstream, the simulator, the client
//! process with its private resolver, the narration, and the signals that stop them, all stopped
//! on every path out; then, when asked, the judge's observations and grade.
//!
//! Two commands play scenarios this way: `simulate` (one, narrated for a person) and `certify`
//! (every scenario, in turn or by a pool of workers, for a client's CI: its runner is
//! `certify`). It lives in the library so that both reach it and neither command imports the
//! other. `demo` plays one to the watch, and shows the simulator's side beside it (`demo_view`).

pub mod certify;
pub mod client;
pub mod demo_view;
pub mod grade;
mod play;
mod settings;
pub mod settled;
mod start;
pub mod worker;

pub use start::{TooLoaded, FIRST_CONNECTION_FACTOR, LOAD_FACTOR};

pub use settings::{
    ApiSettings, CertifySettings, ClientSettings, ScenarioChoice, SimulationSettings,
    UpstreamChoice, Verbosity,
};

pub use play::{
    graded, observed_until, page_parts, play, report_parts, sent_frames, Graded, Played, SentFrame,
    Signals, Stop,
};
