//! Node-API glue.
