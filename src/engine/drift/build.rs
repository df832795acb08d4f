//! The real build drift check (owned by the drift-build helper; stub until it lands).
