//! The demo world's tree at a pin with the fork laid over it, written the way `export-tree`
//! does it: the upstream tree at the pin, the fork's backend files, and each upstream file the
//! fork hooks merged 3-way (fork base as ancestor), conflict markers included. Shared by the
//! integration tests and the HIP fixture (`tests/hip.rs`).
#![allow(dead_code)]

use std::path::Path;

use forkbook::demo::world::World;
use forkbook::engine::FileMap;
use git2::{MergeFileInput, Oid, Repository};

const BACKEND: &str = "mlx/backend/rocm/";

fn files_at(repo: &Repository, commit: &str) -> FileMap {
    let tree = repo
        .find_commit(Oid::from_str(commit).unwrap())
        .unwrap()
        .tree()
        .unwrap();
    let mut files = FileMap::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        if let Ok(blob) = entry.to_object(repo).and_then(|o| o.peel_to_blob()) {
            files.insert(
                format!("{dir}{}", entry.name().unwrap()),
                blob.content().to_vec().into(),
            );
        }
        git2::TreeWalkResult::Ok
    })
    .unwrap();
    files
}

fn merge(path: &str, base: &[u8], ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    let input = |content| {
        let mut file = MergeFileInput::new();
        file.path(path).content(content);
        file
    };
    let merged = git2::merge_file(&input(base), &input(ours), &input(theirs), None).unwrap();
    merged.content().to_vec()
}

/// Writes the upstream tree at `pin` with the fork at `fork_commit` laid over it.
pub fn export(world: &World, pin: &str, fork_commit: &str, dest: &Path) {
    let repo = Repository::open_bare(&world.fork).unwrap(); // holds the upstream history too
    let (base, pin, fork) = (
        files_at(&repo, &world.pin1),
        files_at(&repo, pin),
        files_at(&repo, fork_commit),
    );
    let mut tree = pin.clone();
    for (path, content) in &fork {
        match base.get(path) {
            Some(base_content) if !path.starts_with(BACKEND) => {
                if base_content != content {
                    tree.insert(
                        path.clone(),
                        merge(path, base_content, &pin[path], content).into(),
                    );
                }
            }
            _ => {
                tree.insert(path.clone(), content.clone());
            }
        }
    }
    for (path, content) in &tree {
        let file = dest.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, content.as_slice()).unwrap();
    }
}
