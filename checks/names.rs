//! What a file name in the register means: a full path, a path relative to the backend folder,
//! or a bare file name, the last only where exactly one file of the overlay carries it.
//!
//! Suffix matching is deliberately not allowed: `rocm/eval.cpp` must not quietly match
//! `mlx/backend/rocm/eval.cpp` and something else tomorrow.

/// What a name resolves to among the known files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved<'a> {
    File(&'a str),
    /// A bare name that several files carry.
    Ambiguous(Vec<&'a str>),
    NotFound,
}

/// Resolves `name` among `files` (every path of the base tree and the overlay).
pub fn resolve<'a>(name: &str, files: &'a [String], backend_prefix: &str) -> Resolved<'a> {
    let name = name.trim().trim_start_matches("./");
    if let Some(file) = files.iter().find(|f| f.as_str() == name) {
        return Resolved::File(file);
    }
    let prefix = backend_prefix.trim_end_matches('/');
    if !prefix.is_empty() {
        let under_backend = format!("{prefix}/{name}");
        if let Some(file) = files.iter().find(|f| **f == under_backend) {
            return Resolved::File(file);
        }
    }
    if name.contains('/') {
        return Resolved::NotFound;
    }
    let matches: Vec<&str> = files
        .iter()
        .filter(|f| base_name(f) == name)
        .map(String::as_str)
        .collect();
    match matches.len() {
        0 => Resolved::NotFound,
        1 => Resolved::File(matches[0]),
        _ => Resolved::Ambiguous(matches),
    }
}

/// The last component of a path.
pub fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<String> {
        [
            "mlx/device.cpp",
            "mlx/backend/rocm/eval.cpp",
            "mlx/backend/cuda/eval.cpp",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn full_backend_relative_and_unique_bare_names_resolve() {
        let files = files();
        let prefix = "mlx/backend/rocm/";
        assert_eq!(
            resolve("mlx/device.cpp", &files, prefix),
            Resolved::File("mlx/device.cpp")
        );
        assert_eq!(
            resolve("eval.cpp", &files, prefix),
            Resolved::File("mlx/backend/rocm/eval.cpp")
        );
        assert_eq!(
            resolve("device.cpp", &files, prefix),
            Resolved::File("mlx/device.cpp")
        );
    }

    #[test]
    fn ambiguous_bare_names_and_suffixes_do_not_resolve() {
        let files = files();
        assert_eq!(
            resolve("eval.cpp", &files, ""),
            Resolved::Ambiguous(vec![
                "mlx/backend/rocm/eval.cpp",
                "mlx/backend/cuda/eval.cpp"
            ])
        );
        assert_eq!(resolve("rocm/eval.cpp", &files, ""), Resolved::NotFound);
    }
}
