//! Showing it: the terminal and JSON sinks (`output`), the HTML/SVG page (`report`), the
//! services a watch runs beside (`service`: metrics, hooks, OTLP), `pcap`'s lines on their way
//! to the sink and the page (`pcap_writer`), and a certification's screens and files
//! (`certify`).

pub mod certify;
pub mod output;
pub mod pcap_writer;
pub mod report;
pub mod service;
