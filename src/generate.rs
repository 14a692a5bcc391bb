//! placeholder (generated docs helper)
