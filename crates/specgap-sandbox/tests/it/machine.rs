//! Copy-on-write machines (issue 25 item 4): sandboxes on a machine may change any file of the
//! image, the changes stay in the machine (the image is never written), and the machine's
//! layer is a deterministic OCI layer of exactly those changes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use specgap_protocol::package::Environment;
use specgap_sandbox::{CommandSpec, HostView, ImagePlacement, Machine, run};

use crate::rootfs::{busybox_image, workspace};
use crate::support::sandbox;

/// `(path, kind, mode, content)` of each entry of a tar layer, in order.
fn entries(layer: &[u8]) -> Vec<(String, char, u32, String)> {
    let mut archive = tar::Archive::new(layer);
    let mut out = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let header = entry.header().clone();
        let kind = match header.entry_type() {
            tar::EntryType::Directory => 'd',
            tar::EntryType::Symlink => 'l',
            _ => 'f',
        };
        let mut text = String::new();
        if kind == 'l' {
            text = entry.link_name().unwrap().unwrap().display().to_string();
        } else {
            std::io::Read::read_to_string(&mut entry, &mut text).unwrap();
        }
        assert_eq!((header.uid().unwrap(), header.gid().unwrap(), header.mtime().unwrap()), (0, 0, 0));
        out.push((entry.path().unwrap().display().to_string(), kind, header.mode().unwrap() & 0o7777, text));
    }
    out
}

fn image_files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().strip_prefix(root).unwrap().to_path_buf(), std::fs::read(e.path()).unwrap()))
        .collect()
}

#[test]
fn a_machine_takes_changes_anywhere_in_the_image_and_its_layer_holds_exactly_them() {
    let dir = tempfile::tempdir().unwrap();
    let Some(image) = busybox_image(dir.path()) else { return };
    std::fs::create_dir_all(image.join("opt/tool/old")).unwrap();
    std::fs::write(image.join("opt/tool/old/data"), "old\n").unwrap();
    let before = image_files(&image);
    let ws = workspace(dir.path());
    let view = HostView::on_rootfs(&image, &Environment::default(), &ImagePlacement::workdir("/app")).unwrap();
    let machine = Machine::new().unwrap();
    let on_machine = view.with_machine(&machine).unwrap();
    let script = "echo installed > /etc/tool.conf && rm /etc/motd && rm -r /opt/tool && mkdir -p /opt/tool/new \
                  && echo fresh > /opt/tool/new/data && ln -s /etc/tool.conf /home/conf && mkdir /home/empty \
                  && echo in-ws > ws.txt && echo scratch > /tmp/t && id -u";
    let out = run(&CommandSpec::shell(script, &ws), &on_machine, &sandbox()).unwrap();
    assert_eq!(out.stdout.text(), "1000\n", "{}", out.stderr.text());
    assert!(out.success());
    // A later sandbox of the same machine sees the changes; the image is unchanged.
    let again = run(
        &CommandSpec::shell("cat /etc/tool.conf /opt/tool/new/data; ls /opt/tool; test -e /etc/motd || echo no-motd", &ws),
        &on_machine,
        &sandbox(),
    )
    .unwrap();
    assert_eq!(again.stdout.text(), "installed\nfresh\nnew\nno-motd\n", "{}", again.stderr.text());
    assert_eq!(image_files(&image), before);
    let plain = run(&CommandSpec::shell("cat /etc/motd; test -e /etc/tool.conf || echo none", &ws), &view, &sandbox()).unwrap();
    assert_eq!(plain.stdout.text(), "from the image\nnone\n");
    assert_eq!(std::fs::read_to_string(ws.join("ws.txt")).unwrap(), "in-ws\n");

    let mut layer = Vec::new();
    let summary = machine.write_layer(&image, &mut layer, &view.machine_mount_points()).unwrap();
    assert_eq!(
        entries(&layer),
        vec![
            ("etc".into(), 'd', 0o755, String::new()),
            ("etc/.wh.motd".into(), 'f', 0o644, String::new()),
            ("etc/tool.conf".into(), 'f', 0o644, "installed\n".into()),
            ("home".into(), 'd', 0o755, String::new()),
            ("home/conf".into(), 'l', 0o777, "/etc/tool.conf".into()),
            ("home/empty".into(), 'd', 0o755, String::new()),
            ("opt".into(), 'd', 0o755, String::new()),
            ("opt/tool".into(), 'd', 0o755, String::new()),
            ("opt/tool/.wh..wh..opq".into(), 'f', 0o644, String::new()),
            ("opt/tool/new".into(), 'd', 0o755, String::new()),
            ("opt/tool/new/data".into(), 'f', 0o644, "fresh\n".into()),
        ]
    );
    assert_eq!(summary.deleted, vec!["/etc/motd".to_string()]);
    assert_eq!(
        summary.changed,
        ["/etc", "/etc/tool.conf", "/home", "/home/conf", "/home/empty", "/opt", "/opt/tool", "/opt/tool/new", "/opt/tool/new/data"]
    );
    assert_eq!(summary.bytes, 16);
    let mut second = Vec::new();
    machine.write_layer(&image, &mut second, &view.machine_mount_points()).unwrap();
    assert_eq!(second, layer, "the same changes give the same bytes");
}

#[test]
fn an_untouched_machine_has_an_empty_layer_and_a_session_runs_on_a_machine() {
    let dir = tempfile::tempdir().unwrap();
    let Some(image) = busybox_image(dir.path()) else { return };
    let ws = workspace(dir.path());
    let view = HostView::on_rootfs(&image, &Environment::default(), &ImagePlacement::workdir("/home/user/app")).unwrap();
    let machine = Machine::new().unwrap();
    let on_machine = view.with_machine(&machine).unwrap();
    let out = run(&CommandSpec::shell("pwd; cat notes.txt", &ws), &on_machine, &sandbox()).unwrap();
    assert_eq!(out.stdout.text(), "/home/user/app\npublic notes\n", "{}", out.stderr.text());
    let summary = machine.write_layer(&image, std::io::sink(), &view.machine_mount_points()).unwrap();
    assert!(summary.is_empty(), "{summary:?}");

    let mut session = specgap_sandbox::Session::new(CommandSpec::shell("", &ws), on_machine, sandbox());
    let first = session.run_shell("echo one > /home/one", Duration::from_secs(10), 4096).unwrap();
    assert!(first.success(), "{}", first.stderr.text());
    let second = session.run_shell("cat /home/one", Duration::from_secs(10), 4096).unwrap();
    assert_eq!(second.stdout.text(), "one\n");
    drop(session);
    let summary = machine.write_layer(&image, std::io::sink(), &view.machine_mount_points()).unwrap();
    assert_eq!(summary.changed, ["/home", "/home/one"]);
}

#[test]
fn a_host_command_view_has_no_machine() {
    let machine = Machine::new().unwrap();
    let err = HostView::system().unwrap().with_machine(&machine).unwrap_err();
    assert_eq!(err.to_string(), "copy-on-write machine: only an image environment runs on a copy-on-write machine");
}
