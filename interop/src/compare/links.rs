//! The checked-in list of link specs (`interop/links.toml`): what each
//! emulated path does to data and to acknowledgements, and how much to move
//! over it so the whole comparison stays tractable.

use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// One emulated path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Short name (a table row, a `--only` value).
    pub name: String,
    /// What it models, for the table's heading.
    pub title: String,
    /// Impairments of the data direction (server → client), sift-link's
    /// netem syntax (`sift-link --reverse`).
    pub data: String,
    /// Impairments of the acknowledgement direction (client → server,
    /// `sift-link --forward`).
    pub ack: String,
    /// Size of the file downloaded in each run, bytes.
    pub file_bytes: u64,
    /// A run still going after this many seconds is stopped and counted as
    /// failed.
    pub timeout_s: u64,
}

/// The whole file: `[[link]]` tables.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkFile {
    /// The specs, in table order.
    pub link: Vec<LinkSpec>,
}

impl LinkFile {
    /// Reads and checks a link file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("{}", path.display()))
    }

    /// Parses and checks link-file text.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let file: LinkFile = toml::from_str(text)?;
        if file.link.is_empty() {
            anyhow::bail!("no [[link]] tables");
        }
        for (i, spec) in file.link.iter().enumerate() {
            if spec.name.is_empty() || spec.name.contains(char::is_whitespace) {
                anyhow::bail!(
                    "link {} has a name that is empty or has spaces: {:?}",
                    i + 1,
                    spec.name
                );
            }
            if file.link[..i].iter().any(|other| other.name == spec.name) {
                anyhow::bail!("two links are named {:?}", spec.name);
            }
            if spec.file_bytes == 0 || spec.timeout_s == 0 {
                anyhow::bail!(
                    "link {:?} needs file_bytes and timeout_s above zero",
                    spec.name
                );
            }
        }
        Ok(file)
    }

    /// Only the named specs (all of them for an empty list), in file order.
    /// The links named in `names` (every link when it is empty). The name
    /// `loopback` selects none of them: with only it, only the loopback
    /// efficiency runs are made.
    pub fn select(&self, names: &[String]) -> anyhow::Result<Vec<LinkSpec>> {
        for name in names {
            if name != LOOPBACK_ONLY && !self.link.iter().any(|spec| &spec.name == name) {
                let known: Vec<&str> = self.link.iter().map(|s| s.name.as_str()).collect();
                anyhow::bail!("no link named {name:?} (known: {})", known.join(", "));
            }
        }
        Ok(self
            .link
            .iter()
            .filter(|spec| names.is_empty() || names.contains(&spec.name))
            .cloned()
            .collect())
    }
}

/// The `--only` name that selects no link, only the loopback runs.
pub const LOOPBACK_ONLY: &str = "loopback";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_selects_no_link() {
        let file =
            LinkFile::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("links.toml")).unwrap();
        assert!(file.select(&["loopback".into()]).unwrap().is_empty());
        let one = file
            .select(&["loopback".into(), "clean-50m-20ms".into()])
            .unwrap();
        assert_eq!(one.len(), 1);
        assert!(file.select(&["nowhere".into()]).is_err());
    }

    #[test]
    fn the_checked_in_link_file_parses_and_has_the_issues_specs() {
        let file =
            LinkFile::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("links.toml")).unwrap();
        assert!(file.link.len() >= 7, "{} links", file.link.len());
        let all = |word: &str| file.link.iter().any(|s| s.data.contains(word));
        assert!(all("gemodel") && all("corrupt") && all("300ms") && all("1600kbit"));
    }

    #[test]
    fn duplicate_names_and_empty_files_are_refused() {
        let spec = "[[link]]\nname = \"a\"\ntitle = \"t\"\ndata = \"\"\nack = \"\"\nfile_bytes = 1\ntimeout_s = 1\n";
        assert!(LinkFile::parse(spec).is_ok());
        assert!(LinkFile::parse(&format!("{spec}{spec}")).is_err());
        assert!(LinkFile::parse("link = []").is_err());
    }

    #[test]
    fn selecting_an_unknown_link_names_the_known_ones() {
        let file = LinkFile::parse("[[link]]\nname = \"a\"\ntitle = \"t\"\ndata = \"\"\nack = \"\"\nfile_bytes = 1\ntimeout_s = 1\n").unwrap();
        let error = file.select(&["b".into()]).unwrap_err().to_string();
        assert!(error.contains("\"b\"") && error.contains("a"), "{error}");
        assert_eq!(file.select(&[]).unwrap().len(), 1);
    }
}
