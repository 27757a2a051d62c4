//! The webhooks extension's black-box tests: the real server, with this
//! extension linked, on 127.0.0.1:0, each test once on SQLite and once on a
//! fresh PostgreSQL database (acs-testkit).

// Linked for its `inventory` registration.
use acs_ext_webhooks as _;

pub use acs_testkit::both;

mod common {
    pub use acs_testkit::*;
}
mod receiver {
    pub use acs_testkit::receiver::*;
}

mod console;
mod webhooks;
