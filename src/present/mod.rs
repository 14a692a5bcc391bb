//! Showing it: the terminal and JSON sinks (`output`), the HTML/SVG page (`report`), the
//! services a watch runs beside (`service`: metrics, hooks, OTLP), and a certification's
//! screens and files (`certify`).

pub mod certify;
pub mod output;
pub mod report;
pub mod service;
