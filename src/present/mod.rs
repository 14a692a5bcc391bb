//! Showing it: the terminal and JSON sinks (`output`), the HTML/SVG page (`report`), and the
//! services a watch runs beside (`service`: metrics, hooks, OTLP).

pub mod output;
pub mod report;
pub mod service;
