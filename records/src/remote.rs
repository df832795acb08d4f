//! Which repository a remote URL names: the one rule for comparing the fork and upstream as
//! `forkbook.toml`, `UPSTREAM` and the register's links write them.

/// `https://host/owner/repo` from a remote URL (`https://`, `http://`, `ssh://` or git's
/// `user@host:path`), without a trailing `/` or `.git`; `None` for a local path.
pub fn web_address(url: &str) -> Option<String> {
    let url = url.trim().trim_end_matches('/');
    let url = url.strip_suffix(".git").unwrap_or(url);
    if let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    {
        return Some(format!("https://{rest}"));
    }
    if let Some(rest) = url.strip_prefix("ssh://") {
        let rest = rest.split_once('@').map_or(rest, |(_, r)| r);
        return Some(format!("https://{}", rest.replacen(':', "/", 1)));
    }
    let (user_host, path) = url.split_once(':')?;
    let host = user_host.split_once('@')?.1;
    (!path.starts_with('/') && !host.is_empty()).then(|| format!("https://{host}/{path}"))
}

/// Whether two remote URLs name the same repository: the same web address ignoring case (the
/// forges ignore it), or for local paths the same path but for a trailing `/` or `.git`.
pub fn same_repository(a: &str, b: &str) -> bool {
    match (web_address(a), web_address(b)) {
        (Some(a), Some(b)) => a.eq_ignore_ascii_case(&b),
        (None, None) => {
            let bare = |u: &str| {
                let u = u.trim().trim_end_matches('/');
                u.strip_suffix(".git").unwrap_or(u).to_string()
            };
            bare(a) == bare(b)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_addresses_come_from_remote_urls_not_local_paths() {
        assert_eq!(
            web_address("https://github.com/NripeshN/mlx.git").as_deref(),
            Some("https://github.com/NripeshN/mlx")
        );
        assert_eq!(
            web_address("git@github.com:ml-explore/mlx.git").as_deref(),
            Some("https://github.com/ml-explore/mlx")
        );
        assert_eq!(
            web_address("ssh://git@github.com/o/r").as_deref(),
            Some("https://github.com/o/r")
        );
        assert_eq!(web_address("/tmp/world/fork.git"), None);
        assert_eq!(web_address("C:/mirrors/fork"), None);
    }

    #[test]
    fn one_repository_in_its_spellings_and_no_other() {
        let fork = "https://github.com/NripeshN/mlx";
        for same in [
            "https://github.com/nripeshn/mlx.git",
            "git@github.com:NripeshN/mlx.git",
            "http://github.com/NripeshN/mlx/",
        ] {
            assert!(same_repository(fork, same), "{same}");
        }
        for other in [
            "https://github.com/attacker/mlx",
            "https://github.com/NripeshN/mlx-x",
            "/tmp/mirrors/NripeshN/mlx",
        ] {
            assert!(!same_repository(fork, other), "{other}");
        }
        assert!(same_repository("/tmp/w/fork.git", "/tmp/w/fork/"));
        assert!(!same_repository("/tmp/w/fork.git", "/tmp/w/other.git"));
    }
}
