//! Files a command writes whole at the end of a run.

use std::fs::{File, OpenOptions};
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

/// Whether `out` is one of the files `inputs` (not standard input or
/// output, `-`): a file about to be written that a run reads.
pub fn is_one_of(out: &Path, inputs: &[PathBuf]) -> bool {
    let real = |p: &Path| {
        Some(p)
            .filter(|p| p.as_os_str() != "-")?
            .canonicalize()
            .ok()
    };
    real(out).is_some_and(|o| inputs.iter().any(|i| real(i).as_ref() == Some(&o)))
}

/// A file written at the end of a run (an SVG), opened (not truncated)
/// before the capture is read, so that a path that cannot be written fails
/// at once; removed again when nothing is written and it was ours.
pub struct OutputFile {
    path: PathBuf,
    file: Option<File>,
    created: bool,
}

impl OutputFile {
    /// `path` opened for writing, or standard output for `-`.
    pub fn open(path: &Path) -> Result<OutputFile, String> {
        if path.as_os_str() == "-" {
            return Ok(OutputFile {
                path: path.to_path_buf(),
                file: None,
                created: false,
            });
        }
        let existed = path.exists();
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| e.to_string())?;
        Ok(OutputFile {
            path: path.to_path_buf(),
            file: Some(file),
            created: !existed,
        })
    }

    /// Nothing to write after all: remove the file if it is ours.
    pub fn abandon(self) {
        if self.created {
            drop(self.file);
            let _ = std::fs::remove_file(&self.path);
        }
    }

    /// `text` into the file (truncated first), or on `out` for `-`.
    pub fn write(self, text: &str, out: &mut impl Write) -> Result<(), String> {
        match self.file {
            None => out.write_all(text.as_bytes()).map_err(|e| e.to_string()),
            Some(mut f) => {
                f.set_len(0).map_err(|e| e.to_string())?;
                f.rewind().map_err(|e| e.to_string())?;
                f.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
                f.flush().map_err(|e| e.to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_written_or_abandoned() {
        let dir = std::env::temp_dir().join(format!("rd-outfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.svg");
        std::fs::write(&path, "an older and longer text").unwrap();
        OutputFile::open(&path)
            .unwrap()
            .write("new", &mut Vec::new())
            .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        // Abandoned: a file that existed stays; one we made goes.
        OutputFile::open(&path).unwrap().abandon();
        assert!(path.exists());
        let fresh = dir.join("b.svg");
        OutputFile::open(&fresh).unwrap().abandon();
        assert!(!fresh.exists());
        let mut out = Vec::new();
        OutputFile::open(Path::new("-"))
            .unwrap()
            .write("x", &mut out)
            .unwrap();
        assert_eq!(out, b"x");
        assert!(OutputFile::open(&dir.join("no/such/dir/c.svg")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
