//! DRA objects for the integration tests: `devices` (DeviceClasses, ResourceSlices, nodes) and `claims` (pods,
//! their claims, what the scheduler allocated and the inventory shows).

pub mod claims;
pub mod devices;

#[allow(unused_imports)] // each test binary uses a different part of the harness
pub use {claims::*, devices::*};
