//! The protocol: RESP read and written exactly (`resp`), the maintenance notifications parsed
//! from it (`notification`), Azure's pub/sub maintenance events (`azure`), and the access to a
//! frame's parts they share (`frame_access`). Everything above speaks through these.

pub mod azure;
pub(crate) mod frame_access;
pub mod notification;
pub mod resp;
