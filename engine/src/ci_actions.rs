//! Every action the workflow of `forkbook ci github` runs, and the revision it runs at: one
//! table, so a bump is one line here and a test holds every `uses:` of every workflow to it.
//!
//! GitHub's own actions (`actions/…`) are taken at the major tag GitHub moves with each of its
//! releases. Any other action is pinned by the full id of a released commit, with the release
//! in a comment, as GitHub's hardening guide asks of third-party actions: a tag is whatever its
//! repository's owner makes it, and `peter-evans/create-pull-request` runs with a token that
//! writes to the repository and opens pull requests.

/// An action and the revision a workflow takes it at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action {
    /// `owner/name`.
    pub name: &'static str,
    /// A major tag (`v4`) for GitHub's own, else a full commit id.
    pub revision: &'static str,
    /// The release a commit id is, for the comment beside it.
    pub release: Option<&'static str>,
}

impl Action {
    /// The value of a step's `uses:`, with the release as a YAML comment after a commit id.
    pub fn uses(&self) -> String {
        let Action { name, revision, .. } = self;
        match self.release {
            Some(release) => format!("{name}@{revision} # {release}"),
            None => format!("{name}@{revision}"),
        }
    }
}

pub const CHECKOUT: Action = github("actions/checkout", "v4");
pub const CACHE: Action = github("actions/cache", "v4");
pub const CONFIGURE_PAGES: Action = github("actions/configure-pages", "v5");
pub const UPLOAD_PAGES_ARTIFACT: Action = github("actions/upload-pages-artifact", "v3");
pub const DEPLOY_PAGES: Action = github("actions/deploy-pages", "v4");
/// v7.0.11, the release the tag `v7` pointed at when this was written.
pub const CREATE_PULL_REQUEST: Action = Action {
    name: "peter-evans/create-pull-request",
    revision: "22a9089034f40e5a961c8808d113e2c98fb63676",
    release: Some("v7.0.11"),
};

/// Every action above.
pub const ALL: &[Action] = &[
    CHECKOUT,
    CACHE,
    CONFIGURE_PAGES,
    UPLOAD_PAGES_ARTIFACT,
    DEPLOY_PAGES,
    CREATE_PULL_REQUEST,
];

/// One of GitHub's own actions at its major tag.
const fn github(name: &'static str, tag: &'static str) -> Action {
    Action {
        name,
        revision: tag,
        release: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_action_from_outside_github_is_pinned_by_a_commit_id_and_names_its_release() {
        for action in ALL {
            let (owner, _) = action.name.split_once('/').unwrap();
            if owner == "actions" {
                assert!(action.revision.starts_with('v'), "{action:?}");
                continue;
            }
            let commit = action.revision.len() == 40
                && action
                    .revision
                    .chars()
                    .all(|c| matches!(c, '0'..='9' | 'a'..='f'));
            assert!(commit, "{action:?}");
            assert!(
                action.release.is_some_and(|r| r.starts_with('v')),
                "{action:?}"
            );
            assert!(action
                .uses()
                .ends_with(&format!(" # {}", action.release.unwrap())));
        }
    }
}
