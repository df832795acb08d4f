//! The core files' merges kept beside the object cache: a run at the same commits reads them
//! back instead of merging again, and a damaged entry is merged again, never believed.

use crate::common::Demo;
use forkbook::engine::config::Layout;

#[test]
fn kept_merges_give_the_same_results_and_a_damaged_entry_is_merged_again() {
    for layout in [Layout::Patch, Layout::Files] {
        let demo = Demo::new(layout);
        let store = demo.demo.cache.with_file_name("forkbook-merges");
        let pin2 = demo.demo.world.pin2.clone();
        // At pin = base no core file needs a merge, so nothing is kept.
        let (code, _) = demo.run(&["status"]);
        assert_eq!(code, 0);
        assert!(!store.exists(), "{layout:?}: no merge, no entry");
        let (code, out) = demo.run(&["retarget", &pin2]);
        assert_eq!(code, 1, "{layout:?}: device.cpp conflicts: {out}");
        let entries = || std::fs::read_dir(&store).unwrap().count();
        let kept = entries();
        assert!(kept >= 1, "{layout:?}: the retarget's merges are kept");
        let first = [demo.run(&["residual"]), demo.run(&["status"])];
        assert!(
            first[1]
                .1
                .contains("pin/fork conflicts in core files: mlx/device.cpp"),
            "{layout:?}: {first:?}"
        );
        let again = [demo.run(&["residual"]), demo.run(&["status"])];
        assert_eq!(first, again, "{layout:?}: read back, the same results");
        assert_eq!(entries(), kept, "{layout:?}: nothing new kept");
        for entry in std::fs::read_dir(&store).unwrap() {
            let path = entry.unwrap().path();
            let mut bytes = std::fs::read(&path).unwrap();
            let last = bytes.len() - 2;
            bytes.truncate(last);
            std::fs::write(&path, bytes).unwrap();
        }
        let damaged = [demo.run(&["residual"]), demo.run(&["status"])];
        assert_eq!(first, damaged, "{layout:?}: a cut entry is merged again");
    }
}
