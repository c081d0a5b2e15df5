//! [`discover`]: every task package below a set of paths (a *suite*, DESIGN §1).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::LoadError;
use crate::load::load;
use crate::package::TaskPackage;

/// Directories that are never searched for packages: a package's own parts can hold files
/// named `task.toml` (a workspace that is itself a task repository) that are not packages.
const NEVER_SEARCHED: [&str; 3] = ["workspace", "solutions", "residual"];

/// Finds the directories holding a `task.toml` below `paths`, sorted and deduplicated.
///
/// A path may be a package directory, a directory containing packages at any depth, or a
/// `task.toml` file. The search does not descend into a package, into directories named
/// `workspace`, `solutions` or `residual`, into hidden directories (`.git`, ...), or through
/// symlinks.
///
/// # Errors
/// [`LoadError::NoSuchPath`] when a path does not exist, [`LoadError::Io`] /
/// [`LoadError::Walk`] when a path cannot be read, [`LoadError::NoPackages`] when nothing is
/// found.
pub fn discover_dirs<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<PathBuf>, LoadError> {
    let mut found = Vec::new();
    for path in paths {
        let path = path.as_ref();
        let meta = match fs_err::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(LoadError::NoSuchPath { path: path.to_path_buf() });
            }
            other => other?,
        };
        if meta.is_file() && path.file_name().is_some_and(|n| n == "task.toml") {
            found.push(path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf));
            continue;
        }
        search(path, &mut found)?;
    }
    found.sort();
    found.dedup();
    if found.is_empty() {
        return Err(LoadError::NoPackages { paths: paths.iter().map(|p| p.as_ref().to_path_buf()).collect() });
    }
    Ok(found)
}

fn search(start: &Path, found: &mut Vec<PathBuf>) -> Result<(), LoadError> {
    let mut walker = walkdir::WalkDir::new(start).follow_links(false).sort_by_file_name().into_iter();
    while let Some(item) = walker.next() {
        let item = item?;
        if !item.file_type().is_dir() {
            continue;
        }
        let name = item.file_name().to_string_lossy();
        let is_start = item.depth() == 0;
        if !is_start && (name.starts_with('.') || NEVER_SEARCHED.contains(&name.as_ref())) {
            walker.skip_current_dir();
            continue;
        }
        if item.path().join("task.toml").is_file() {
            found.push(item.path().to_path_buf());
            walker.skip_current_dir();
        }
    }
    Ok(())
}

/// Loads every package below `paths` (see [`discover_dirs`]), sorted by task name.
///
/// Every package is loaded before any error is returned, so a suite with several broken
/// packages names them all at once instead of one per attempt.
///
/// # Errors
/// The errors of [`discover_dirs`]; else, when packages fail to load or two packages share
/// `[task].name` ([`LoadError::DuplicateTaskName`], naming both roots): that one error when
/// there is one, else [`LoadError::BrokenPackages`] holding all of them in path order.
pub fn discover<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<TaskPackage>, LoadError> {
    let mut by_name: BTreeMap<String, TaskPackage> = BTreeMap::new();
    let mut errors = Vec::new();
    for dir in discover_dirs(paths)? {
        let package = match load(&dir) {
            Ok(package) => package,
            Err(err) => {
                errors.push(err);
                continue;
            }
        };
        if let Some(first) = by_name.get(package.name()) {
            errors.push(LoadError::DuplicateTaskName {
                name: package.name().to_owned(),
                first: first.root().to_path_buf(),
                second: package.root().to_path_buf(),
            });
            continue;
        }
        by_name.insert(package.name().to_owned(), package);
    }
    match errors.len() {
        0 => Ok(by_name.into_values().collect()),
        1 => Err(errors.remove(0)),
        _ => Err(LoadError::BrokenPackages { errors }),
    }
}
