//! The connection layer's unit tests.

use super::dial::is_auth_error;
use std::net::IpAddr;

use super::*;

#[test]
fn secrets_never_format() {
    let s = Secret::new("hunter2");
    assert_eq!(format!("{s} {s:?} {:?}", Some(&s)), "*** *** Some(***)");
    assert_eq!(s.expose(), "hunter2");
    let url = RedisUrl::parse("redis://u:hunter2@h").unwrap();
    assert!(!format!("{url:?} {url}").contains("hunter2"));
    let opts = ConnectConfig::default().options_for(&url).unwrap();
    assert!(!format!("{opts:?}").contains("hunter2"));
    assert!(opts.has_password());
}

#[test]
fn auto_endpoint_type_follows_the_shipped_clients() {
    let auto = EndpointTypeChoice::Auto;
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    // (the connected address, whether over TLS, the type to send)
    let cases = [
        ("10.1.2.3", false, EndpointType::InternalIp),
        ("192.168.0.1", true, EndpointType::InternalFqdn),
        ("169.254.1.1", false, EndpointType::InternalIp),
        ("127.0.0.1", false, EndpointType::InternalIp),
        ("fd00::1", false, EndpointType::InternalIp),
        ("fe80::1", true, EndpointType::InternalFqdn),
        ("::ffff:10.0.0.1", false, EndpointType::InternalIp),
        ("8.8.8.8", false, EndpointType::ExternalIp),
        ("2001:db8::1", true, EndpointType::ExternalFqdn),
        ("172.32.0.1", false, EndpointType::ExternalIp),
    ];
    for (addr, tls, want) in cases {
        assert_eq!(auto.resolve(ip(addr), tls), Some(want), "{addr} tls={tls}");
    }
    assert_eq!(
        EndpointTypeChoice::ServerDefault.resolve(ip("10.0.0.1"), false),
        None
    );
    assert_eq!(
        EndpointTypeChoice::None.resolve(ip("10.0.0.1"), false),
        Some(EndpointType::None)
    );
}

#[test]
fn auth_errors_are_told_apart_from_refusals() {
    assert!(is_auth_error(
        "WRONGPASS invalid username-password pair or user is disabled.",
        true
    ));
    assert!(is_auth_error(
        "NOAUTH HELLO must be called with the client already authenticated",
        true
    ));
    assert!(is_auth_error("ERR invalid password", false));
    assert!(is_auth_error("NOPERM this user has no permissions", true));
    assert!(!is_auth_error("NOPERM this user has no permissions", false));
    assert!(!is_auth_error(
        "ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.",
        true
    ));
    assert!(!is_auth_error("NOPROTO unsupported protocol version", true));
}

#[test]
fn hello_info_reads_the_map() {
    let raw = b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:4\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n";
    let info = HelloInfo::from_frame(&rescan(raw).unwrap());
    assert_eq!(info.server.as_deref(), Some("redis"));
    assert_eq!(info.version.as_deref(), Some("7.0.15"));
    assert_eq!((info.proto, info.id), (Some(3), Some(4)));
    assert_eq!(info.describe(), "redis 7.0.15 standalone master");
}

#[test]
fn options_merge_url_over_flags() {
    let config = ConnectConfig {
        user: Some("flaguser".into()),
        password: Some(Secret::new("flagpass")),
        db: Some(4),
        ..ConnectConfig::default()
    };
    let o = config
        .options_for(&RedisUrl::parse("redis://urluser:urlpass@h:7000/2").unwrap())
        .unwrap();
    assert_eq!((o.user(), o.db(), o.port()), (Some("urluser"), 2, 7000));
    assert_eq!(o.password.as_ref().unwrap().expose(), "urlpass");
    let o = config.options_for(&RedisUrl::parse("h").unwrap()).unwrap();
    assert_eq!((o.user(), o.db(), o.port()), (Some("flaguser"), 4, 6379));
    assert_eq!(o.display_endpoint(), "redis://flaguser@h:6379/4");
}
