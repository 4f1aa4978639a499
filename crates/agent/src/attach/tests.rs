use camino::Utf8PathBuf;

use super::*;

/// A project dir with a few files; kept alive by the returned guard.
fn project() -> (tempfile::TempDir, Utf8PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = Utf8PathBuf::from_path_buf(dir.path().canonicalize().unwrap()).unwrap();
    std::fs::create_dir_all(root.join("src/nested")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(root.join("src/mod.rs"), "").unwrap();
    std::fs::write(root.join("notes.md"), "note\n").unwrap();
    (dir, root)
}

fn limits() -> AttachLimits {
    AttachLimits {
        text_cap_bytes: 16 * 1024,
        max_image_bytes: 5 * 1024 * 1024,
    }
}

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

#[test]
fn only_words_that_start_with_at_are_attachments() {
    let p = parse_line("look at @src/main.rs and mail bob@example.com about user@host");
    assert_eq!(p.mentions, ["src/main.rs"]);
    assert_eq!(
        p.text,
        "look at @src/main.rs and mail bob@example.com about user@host"
    );
    // `\@` is a literal `@` and never an attachment; a lone `@` is text.
    let p = parse_line("\\@everyone see @ and @\"my notes.md\" and @a @a");
    assert_eq!(p.text, "@everyone see @ and @\"my notes.md\" and @a @a");
    assert_eq!(p.mentions, ["my notes.md", "a"]);
    // Across lines, after a tab, at the start.
    let p = parse_line("@one\n@two\tx@three");
    assert_eq!(p.mentions, ["one", "two"]);
    assert!(parse_line("no attachments here").mentions.is_empty());
}

#[test]
fn paths_resolve_from_the_working_directory_and_say_if_outside_the_root() {
    let (_d, root) = project();
    let cwd = root.join("src");
    let found = locate("main.rs", &cwd, &root, None).unwrap();
    assert_eq!(found.path, root.join("src/main.rs"));
    assert!(found.inside);
    // Trailing punctuation of a sentence is dropped when that is the file.
    let found = locate("../notes.md,", &cwd, &root, None).unwrap();
    assert_eq!(found.shown, "../notes.md");
    let outside = locate(root.parent().unwrap().as_str(), &cwd, &root, None).unwrap();
    assert!(!outside.inside);
    let home = locate("~/main.rs", &root, &root, Some(cwd.as_str())).unwrap();
    assert_eq!(home.path, root.join("src/main.rs"));
    let err = locate("missing.rs", &cwd, &root, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot attach @missing.rs: no such file (relative to {cwd}); check the path (Tab completes it) or write \\@ for a literal @"
        )
    );
}

#[test]
fn text_is_cut_visibly_at_the_cap_and_binaries_are_refused() {
    let (_d, root) = project();
    std::fs::write(root.join("big.txt"), "é".repeat(100)).unwrap();
    std::fs::write(root.join("bin"), b"ab\0cd").unwrap();
    let small = AttachLimits {
        text_cap_bytes: 11,
        ..limits()
    };
    let f = locate("big.txt", &root, &root, None).unwrap();
    let a = read(&f, &small, Accept::Any).unwrap();
    // 11 bytes end inside the sixth `é`: five are kept.
    assert_eq!(
        a,
        Attachment::Text {
            shown: "big.txt".into(),
            text: "ééééé".into(),
            bytes: 200,
            cut: 189,
        }
    );
    let Content::Text(msg) = content("read this", &[a]) else {
        panic!("text only is a plain string")
    };
    assert_eq!(
        msg,
        "read this\n\nAttached: big.txt\nééééé\n[attachment cut: 189 of 200 bytes of big.txt left out (tools.output_cap_bytes); read the file for the rest]"
    );
    let bin = locate("bin", &root, &root, None).unwrap();
    assert!(matches!(
        read(&bin, &limits(), Accept::Any),
        Err(AttachError::Binary { .. })
    ));
    let dir = locate("src", &root, &root, None).unwrap();
    assert!(matches!(
        read(&dir, &limits(), Accept::Any),
        Err(AttachError::Directory { .. })
    ));
}

#[test]
fn images_are_told_by_their_bytes_and_become_image_parts() {
    let (_d, root) = project();
    // A png named .txt is still an image; a text named .png is not.
    std::fs::write(root.join("shot.txt"), PNG).unwrap();
    std::fs::write(root.join("fake.png"), "just text").unwrap();
    let f = locate("shot.txt", &root, &root, None).unwrap();
    let img = read(&f, &limits(), Accept::Images).unwrap();
    let Attachment::Image {
        media_type, bytes, ..
    } = &img
    else {
        panic!("{img:?}")
    };
    assert_eq!((*media_type, *bytes), ("image/png", PNG.len() as u64));
    assert_eq!(img.describe(), "shot.txt [image png 16 B]");
    let fake = locate("fake.png", &root, &root, None).unwrap();
    assert!(matches!(
        read(&fake, &limits(), Accept::Images),
        Err(AttachError::NotAnImage { .. })
    ));
    assert!(matches!(
        read(&fake, &limits(), Accept::Any),
        Ok(Attachment::Text { .. })
    ));
    let tiny = AttachLimits {
        max_image_bytes: 8,
        ..limits()
    };
    let err = read(&f, &tiny, Accept::Any).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot attach shot.txt: the image is 16 B (16 bytes), over tools.max_image_bytes (8 bytes); make it smaller or raise the limit"
    );

    let Content::Parts(parts) = content("what is this?", &[img]) else {
        panic!("an image makes parts")
    };
    assert_eq!(
        parts,
        [
            Part::Text {
                text: "what is this?\n\nAttached: shot.txt (image/png, 16 B)".into()
            },
            Part::Image {
                media_type: Some("image/png".into()),
                data: Some("iVBORw0KGgoAAAANSUhEUg==".into()),
                url: None,
            }
        ]
    );
    for (head, ty) in [
        (&b"\xff\xd8\xff\xe0"[..], "image/jpeg"),
        (b"GIF89a..", "image/gif"),
        (b"RIFF\0\0\0\0WEBPVP8 ", "image/webp"),
    ] {
        assert_eq!(image_type(head), Some(ty));
    }
    assert_eq!(image_type(b"RIFF\0\0\0\0WAVE"), None);
}

#[test]
fn completion_lists_directories_first_and_skips_ignored_and_hidden_files() {
    let (_d, root) = project();
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join("build.log"), "").unwrap();
    std::fs::write(root.join(".env"), "").unwrap();
    std::fs::write(root.join("src/main2.rs"), "").unwrap();
    let paths = |typed: &str| -> Vec<String> {
        complete(typed, &root, None)
            .into_iter()
            .map(|c| c.path)
            .collect()
    };
    assert_eq!(paths(""), ["src/", "notes.md"]);
    assert_eq!(
        paths("src/m"),
        ["src/main.rs", "src/main2.rs", "src/mod.rs"]
    );
    assert_eq!(
        paths("src/"),
        ["src/nested/", "src/main.rs", "src/main2.rs", "src/mod.rs"]
    );
    assert_eq!(paths(".e"), [".env"]);
    assert!(paths("build").is_empty(), "ignored by .gitignore");
    assert!(paths("nowhere/x").is_empty());
}
