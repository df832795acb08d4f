//! Notes a run leaves for the person running it, beside its result: something it did not do
//! and why (a results cache left off because its secret is not this user's alone), which is no
//! failure of the command. The command line prints them after the result (`note: …`); the
//! engine, which has no terminal, only collects them, per thread, as each command runs on one.

use std::cell::RefCell;

thread_local! {
    static NOTES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Leaves `note` (one line) for this thread's command, once however often it is left.
pub fn leave(note: impl Into<String>) {
    let note = note.into();
    NOTES.with(|notes| {
        let mut notes = notes.borrow_mut();
        if !notes.contains(&note) {
            notes.push(note);
        }
    });
}

/// The notes this thread's command left, in order; none are left after.
pub fn take() -> Vec<String> {
    NOTES.with(|notes| std::mem::take(&mut *notes.borrow_mut()))
}
