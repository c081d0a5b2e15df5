//! Role prompts: replacing one by a file, refusing a stray file, filling placeholders.

use specgap_synth::prompts::{Prompts, fill};
use specgap_synth::role::RoleName;

#[test]
fn a_prompts_directory_replaces_only_the_files_it_holds() {
    let tmp = tempfile::tempdir().unwrap();
    fs_err::write(tmp.path().join("auditor.md"), "Audit {package}.").unwrap();
    let prompts = Prompts::with_dir(tmp.path()).unwrap();
    let built_in = Prompts::default();
    assert_eq!(prompts.template(RoleName::Auditor), "Audit {package}.");
    assert_eq!(prompts.template(RoleName::Planner), built_in.template(RoleName::Planner));
    assert_eq!(prompts.builder, built_in.builder);
    assert_eq!(prompts.calibrator, built_in.calibrator);
}

#[test]
fn a_stray_file_in_the_prompts_directory_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    fs_err::write(tmp.path().join("reviewer.md"), "x").unwrap();
    let err = Prompts::with_dir(tmp.path()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{} replaces no synthesize prompt; the names are planner.md, builder.md, auditor.md, calibrator.md, implementer.md",
            tmp.path().join("reviewer.md").display()
        )
    );
}

#[test]
fn fill_replaces_known_placeholders_and_keeps_others() {
    assert_eq!(fill("{a} and {b} and {c}", &[("a", "1".into()), ("b", "2".into())]), "1 and 2 and {c}");
}

#[test]
fn every_built_in_prompt_uses_its_documented_placeholders() {
    let prompts = Prompts::default();
    for (role, names) in [
        (RoleName::Planner, &["{source}", "{requirements}", "{min_withheld}", "{redesign}"][..]),
        (RoleName::Builder, &["{work_dir}", "{brief}", "{fixes}"][..]),
        (RoleName::Auditor, &["{package}", "{summary}", "{acceptance}"][..]),
        (RoleName::Calibrator, &["{package}", "{rollouts}"][..]),
        (RoleName::Implementer, &["{work_dir}", "{instruction}"][..]),
    ] {
        for name in names {
            assert!(prompts.template(role).contains(name), "{} lacks {name}", role.as_str());
        }
    }
}
