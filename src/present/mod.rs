//! Showing it: the terminal and JSON sinks (`output`), the HTML/SVG page (`report`), and the
//! services a watch runs beside (`service`: metrics, hooks, OTLP); and `pcap`'s lines on their way
//! to the sink and the page (`pcap_writer`).

pub mod output;
pub mod pcap_writer;
pub mod report;
pub mod service;
