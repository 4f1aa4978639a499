use super::*;
use eonyx_core::{Message, MessageRecord};

fn rec(seq: u64, m: Message) -> MessageRecord {
    MessageRecord {
        seq,
        ts: String::new(),
        message: m,
    }
}

fn est() -> Estimator {
    Estimator::new(4.0, 4096)
}

#[test]
fn every_user_message_verbatim_in_order_and_nothing_eonyx_wrote() {
    let records = [
        rec(1, Message::user("never touch migrations/")),
        rec(2, Message::assistant("ok")),
        rec(3, Message::tool_result("c1", "file body")),
        rec(4, Message::user("[pinned by the user: x]")),
        rec(
            5,
            Message::user(eonyx_core::job::exit_notice(
                1,
                eonyx_core::job::JobState::Exited(0),
                3,
                "make",
            )),
        ),
        rec(6, Message::user("actually, use SQLite\nand keep it small")),
    ];
    let said = user_words(&records, 1000, &est()).unwrap();
    assert_eq!(
        said.words.text,
        "## What the user said\n\n[#1] never touch migrations/\n\n[#6] actually, use SQLite\nand keep it small"
    );
    assert_eq!((said.words.kept, said.words.left_out), (2, 0));
    assert!(said.note.contains("from #1 to #6"), "{}", said.note);
    assert!(user_words(&records, 0, &est()).is_none());
    assert!(user_words(&records[1..4], 1000, &est()).is_none());
}

#[test]
fn attachments_and_images_are_named_not_copied() {
    let text = "look at @src/a.rs and @\"my notes.md\"\n\nAttached: src/a.rs\nfn main() {}\n\nAttached: my notes.md\nsecret body\n\nAttached: shot.png (image/png, 12 KB)";
    let content = Content::Parts(vec![
        Part::Text {
            text: text.to_owned(),
        },
        Part::Image {
            media_type: Some("image/png".into()),
            data: Some("AAAA".into()),
            url: None,
        },
    ]);
    assert_eq!(
        said_text(&content).unwrap(),
        "look at @src/a.rs and @\"my notes.md\"\n[attached: src/a.rs]\n[attached: my notes.md]\n[attached: shot.png]\n[image]"
    );
    // An ACP client's embedded file is named by its path.
    let acp = "explain this\n\nAttached: /buffer/unsaved.rs\nlet unsaved = 7;";
    assert_eq!(
        said_text(&Content::Text(acp.into())).unwrap(),
        "explain this\n[attached: /buffer/unsaved.rs]"
    );
    // A pasted "Attached:" line the user did not attach stays.
    let pasted = "the log says\n\nAttached: nothing here";
    assert_eq!(said_text(&Content::Text(pasted.into())).unwrap(), pasted);
}

#[test]
fn over_the_budget_the_oldest_and_the_newest_stay_and_the_gap_is_named() {
    let records: Vec<MessageRecord> = (1..=150)
        .map(|i| {
            rec(
                i * 2,
                Message::user(format!("message number {i} {}", "x".repeat(60))),
            )
        })
        .collect();
    // 2,000 tokens at 4 chars each: 8,000 characters for ~11,000.
    let said = user_words(&records, 2000, &est()).unwrap();
    let t = &said.words.text;
    assert!(
        t.starts_with("## What the user said\n\n[#2] message number 1 "),
        "{t}"
    );
    assert!(t.ends_with(&format!("[#300] message number 150 {}", "x".repeat(60))));
    assert!(t.chars().count() <= 8000 + 200, "{}", t.chars().count());
    let left = said.words.left_out;
    assert!(left > 0 && said.words.kept + left == 150);
    let gap = t
        .lines()
        .find(|l| l.contains("left out here"))
        .expect("a gap line");
    assert!(gap.contains(&format!("{left} user message(s)")), "{gap}");
    assert!(gap.contains("`recall` returns them verbatim"), "{gap}");
    // The head holds about a quarter, the newest the rest.
    let head = t.split(gap).next().unwrap().chars().count();
    assert!((1500..=2100).contains(&head), "{head}");
    assert!(said.note.contains("except #"), "{}", said.note);
}

#[test]
fn one_message_larger_than_its_share_keeps_its_start_and_end() {
    let paste = format!(
        "START {} MIDDLE {} END",
        "a".repeat(20_000),
        "b".repeat(20_000)
    );
    let records = [
        rec(1, Message::user(paste.clone())),
        rec(3, Message::user("short one")),
    ];
    let said = user_words(&records, 1000, &est()).unwrap();
    let t = &said.words.text;
    assert!(t.contains("[#1] START"), "{t}");
    assert!(t.contains("END\n\n[#3] short one"), "{t}");
    assert!(!t.contains("MIDDLE"));
    assert!(t.contains("characters of this message cut here"), "{t}");
    assert_eq!((said.words.kept, said.words.left_out), (2, 0));
    assert!(t.chars().count() <= 4000 + 300, "{}", t.chars().count());
    // Alone, it may use the whole budget.
    let alone = user_words(&records[..1], 1000, &est()).unwrap();
    assert!(alone.words.text.chars().count() > 3000);
}

#[test]
fn the_budget_is_a_fifth_of_the_window_at_most_20000_unless_set() {
    let c = CompactionConfig::default();
    assert_eq!(user_words_budget(&c, 8192), 1638);
    assert_eq!(user_words_budget(&c, 400_000), 20_000);
    let set = |t| CompactionConfig {
        user_words_tokens: Some(t),
        ..CompactionConfig::default()
    };
    assert_eq!(user_words_budget(&set(0), 8192), 0);
    assert_eq!(user_words_budget(&set(3000), 8192), 3000);
    assert_eq!(user_words_budget(&set(9000), 8192), 4096);
}
