//! Node-API glue: the only module that imports `napi`. It converts values and wires the
//! completion channel; no scheduling or protocol logic lives here.

pub mod channel;
pub mod convert;
pub mod pool;
pub mod serve;
pub mod shm;
