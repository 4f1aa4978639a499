use super::*;

/// The 13 formats of issue 56, each as a mining model might repeat it.
pub(crate) const FORMATS: [(&str, SecretKind); 13] = [
    (
        "The deploy user is AKIAIOSFODNN7EXAMPLE on staging",
        SecretKind::AwsAccessKey,
    ),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        SecretKind::AwsSecretKey,
    ),
    (
        "CI pushes with ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7C",
        SecretKind::GitHubToken,
    ),
    (
        "Use github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz for the bot",
        SecretKind::GitHubToken,
    ),
    (
        "The OpenAI key is sk-T3BlbkFJa8b7c6d5e4f3g2h1i0jKLMNOPQ",
        SecretKind::OpenAiKey,
    ),
    (
        "Project key sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56",
        SecretKind::OpenAiKey,
    ),
    (
        "Claude runs with sk-ant-api03-Xy9Wv8Ut7Sr6Qp5On4Ml3Kj2Ih1Gf0Ed-AAAA",
        SecretKind::AnthropicKey,
    ),
    (
        "The Slack bot token is xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp",
        SecretKind::SlackToken,
    ),
    (
        "Test with eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        SecretKind::Jwt,
    ),
    (
        "The deploy key: -----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjE= -----END OPENSSH PRIVATE KEY-----",
        SecretKind::PrivateKey,
    ),
    (
        "The registry is https://deploy:s3cr3t-pass@registry.example.com/",
        SecretKind::UrlPassword,
    ),
    (
        "Before tests run export X_TOKEN=f00dbabe1234deadbeef",
        SecretKind::Assignment,
    ),
    (
        "The fixture secret is c2VjcmV0LXBhc3N3b3JkLWZvci10aGUtc3RhZ2luZy1kYXRhYmFzZQ==",
        SecretKind::HighEntropy,
    ),
];

#[test]
fn every_format_of_the_issue_is_found_with_its_kind() {
    for (text, kind) in FORMATS {
        assert_eq!(find(text, &[]), Some(kind), "{text}");
        let redacted = redact(text);
        assert!(redacted.contains("[redacted: "), "{redacted}");
    }
}

#[test]
fn a_known_value_is_found_in_any_case_and_spacing() {
    let known = vec!["AIzaSyD-gemini-key-0123".to_owned(), "short".to_owned()];
    for text in [
        "key AIzaSyD-gemini-key-0123 here",
        "key aizasyd-gemini-key-0123",
        "key AIza SyD-gem ini-key-0123",
    ] {
        assert_eq!(find(text, &known), Some(SecretKind::KeyValue), "{text}");
    }
    assert_eq!(find("a short word", &known), None);
}

#[test]
fn ordinary_memories_are_not_secrets() {
    for text in [
        "We use pnpm, never npm; run pnpm install --frozen-lockfile",
        "Don't touch the generated files under src/generated/protobuf_messages/",
        "The API key lives in the OPENAI_API_KEY variable, never in eonyx.json",
        "Commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 broke the build",
        "Tests: cargo test -p eonyx-tests --test e2e -- web_fetch_proxy::credentials",
        "AbstractSingletonProxyFactoryBeanConfiguration is the entry point",
        "Set password: via the keyring, not in files",
        "Use the sk-learn wrapper",
        "https://docs.rs/regex/latest/regex/bytes/struct.Regex.html",
        "Mount it with user@host:/srv/data, not with a password",
    ] {
        assert_eq!(find(text, &[]), None, "{text}");
        assert_eq!(redact(text), text);
    }
}

#[test]
fn a_private_key_is_redacted_whole() {
    let text =
        "k -----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY----- after";
    assert_eq!(redact(text), "k [redacted: private key] after");
}

#[test]
fn redaction_keeps_the_text_around_each_secret() {
    let text = "a AKIAIOSFODNN7EXAMPLE b ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7C c é";
    assert_eq!(
        redact(text),
        "a [redacted: AWS key] b [redacted: GitHub token] c é"
    );
}
