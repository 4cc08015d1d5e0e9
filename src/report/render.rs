//! A document model rendered to a format: each document implements
//! [`Render`] in its own folder (its model in `mod.rs`, a file per format
//! it has), and the format renderers (`text.rs`, `markdown.rs`,
//! `html.rs`, `csv.rs`, `json.rs`) call it; a format a document does not
//! have falls back to one it has (Markdown and HTML show the text in a
//! code block, CSV says it has none).

use serde::Serialize;

use super::fmt::html_escape;

/// A document in every format.
pub trait Render: Serialize {
    /// Its name as JSON's `kind` (`history`).
    const KIND: &'static str;

    /// Plain text within 80 columns, ending with a newline.
    fn text(&self) -> String;

    /// GitHub Markdown; without one of its own, the text in a code block.
    fn markdown(&self) -> String {
        format!("```\n{}```\n", self.text())
    }

    /// The body of an HTML page and its title; without one of its own,
    /// the text in a `<pre>`.
    fn html(&self) -> (String, String) {
        (
            "kbench".to_string(),
            format!("<pre>{}</pre>", html_escape(&self.text())),
        )
    }

    /// CSV, or `None` when the document has no table to give.
    fn csv(&self) -> Option<String> {
        None
    }

    /// The document as its serialised model, which JSON wraps with its
    /// schema and kind.
    fn json(&self) -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::to_value(self)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Plain {
        line: &'static str,
    }

    impl Render for Plain {
        const KIND: &'static str = "plain";
        fn text(&self) -> String {
            format!("{}\n", self.line)
        }
    }

    #[test]
    fn a_format_a_document_lacks_falls_back_to_its_text() {
        let d = Plain { line: "a <b> & c" };
        assert_eq!(d.markdown(), "```\na <b> & c\n```\n");
        assert_eq!(d.html().1, "<pre>a &lt;b&gt; &amp; c\n</pre>");
        assert_eq!(d.csv(), None);
        assert_eq!(d.json().unwrap()["line"], "a <b> & c");
    }
}
