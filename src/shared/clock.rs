//! The simulator's speed, in one place. A built-in simulator can run a scenario N times faster
//! than real time; everything a watch shows or waits for is then in scenario seconds: offsets
//! after an event, the countdown, the window gauge, the DNS poll intervals, the dry-run's
//! clock, the refresh jitter. One [`ScenarioClock`] is built (and its speed validated) where the
//! settings are, and a clone is handed to each of those; clones share the speed, so the speed
//! a simulator announces, once adopted, is read by all of them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The name of the push the built-in simulator sends maintwatch's own connections when its
/// scenario ends (`>2` `maintwatch-scenario-end` `:round`): the close that follows is the end
/// of a test, shown as such and counted apart from unannounced closes. No server sends it.
pub const SCENARIO_END: &str = "maintwatch-scenario-end";

/// Scenario seconds per real second, shared by its clones.
#[derive(Debug, Clone)]
pub struct ScenarioClock {
    speed: Arc<AtomicU64>,
}

impl Default for ScenarioClock {
    /// Real time: speed 1.
    fn default() -> ScenarioClock {
        ScenarioClock {
            speed: Arc::new(AtomicU64::new(1f64.to_bits())),
        }
    }
}

impl ScenarioClock {
    /// A clock at `speed`, refused unless it is a finite number above 0.
    pub fn new(speed: f64) -> Result<ScenarioClock, SpeedError> {
        let clock = ScenarioClock::default();
        clock.adopt(speed)?;
        Ok(clock)
    }

    /// Checks a speed without keeping it.
    pub fn check(speed: f64) -> Result<f64, SpeedError> {
        if speed.is_finite() && speed > 0.0 {
            Ok(speed)
        } else {
            Err(SpeedError(speed))
        }
    }

    /// Runs at `speed` from now on (a speed the simulator announced), for every clone.
    pub fn adopt(&self, speed: f64) -> Result<(), SpeedError> {
        let speed = ScenarioClock::check(speed)?;
        self.speed.store(speed.to_bits(), Ordering::Relaxed);
        Ok(())
    }

    /// A clock at the same speed, shared with none of this one's clones.
    pub fn detached(&self) -> ScenarioClock {
        ScenarioClock {
            speed: Arc::new(AtomicU64::new(self.speed().to_bits())),
        }
    }

    pub fn speed(&self) -> f64 {
        f64::from_bits(self.speed.load(Ordering::Relaxed))
    }

    /// A real span, in scenario seconds.
    pub fn scenario_secs(&self, real: Duration) -> f64 {
        real.as_secs_f64() * self.speed()
    }

    /// A real span, as a scenario span.
    pub fn to_scenario(&self, real: Duration) -> Duration {
        real.mul_f64(self.speed())
    }

    /// A scenario span, as the real time to wait for it.
    pub fn to_real(&self, scenario: Duration) -> Duration {
        scenario.div_f64(self.speed())
    }

    /// Scenario seconds, as real seconds.
    pub fn real_secs(&self, scenario_s: f64) -> f64 {
        scenario_s / self.speed()
    }
}

/// A speed that is not a finite number above 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeedError(pub f64);

impl std::fmt::Display for SpeedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the speed must be a positive number, not {}", self.0)
    }
}

impl std::error::Error for SpeedError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_an_adopted_speed_and_bad_speeds_are_refused() {
        let clock = ScenarioClock::new(2.0).unwrap();
        let shared = clock.clone();
        clock.adopt(10.0).unwrap();
        assert_eq!(shared.speed(), 10.0);
        assert_eq!(
            shared.to_real(Duration::from_secs(15)),
            Duration::from_millis(1500)
        );
        assert_eq!(shared.scenario_secs(Duration::from_millis(1500)), 15.0);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(ScenarioClock::new(bad).is_err(), "{bad}");
            assert!(clock.adopt(bad).is_err(), "{bad}");
        }
        assert_eq!(shared.speed(), 10.0, "a refused speed changes nothing");
        let apart = clock.detached();
        clock.adopt(3.0).unwrap();
        assert_eq!(apart.speed(), 10.0, "a detached clock keeps its own speed");
    }
}
