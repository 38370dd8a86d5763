//! RFC 9000 §19 stream-state rules the requirements map
//! (`docs/requirements.toml`) names that the other files leave out.

use super::*;

#[test]
fn stop_sending_or_stream_data_blocked_for_a_stream_of_ours_never_opened_is_a_stream_state_error() {
    // RFC 9000 §19.5 (STOP_SENDING), and the rule every stream frame
    // shares (§19.4, §19.10, §19.13): a locally initiated stream the
    // peer names before we opened it.
    let (mut client, _server) = default_pair();
    for id in [0, 2] {
        let error = client.on_stop_sending(id, 0).unwrap_err();
        assert_eq!(error.code, TransportErrorCode::StreamStateError, "{id}");
    }
    let error = client
        .on_stream_data_blocked(0, 10, Instant::now(), SRTT)
        .unwrap_err();
    assert_eq!(error.code, TransportErrorCode::StreamStateError);
}

#[test]
fn stream_data_blocked_for_a_stream_we_only_send_on_is_a_stream_state_error() {
    // RFC 9000 §19.13: the peer cannot be blocked sending on a stream it
    // only receives on (our unidirectional stream).
    let (mut client, _server) = default_pair();
    let id = client.open(Dir::Uni).unwrap();
    let error = client
        .on_stream_data_blocked(id, 10, Instant::now(), SRTT)
        .unwrap_err();
    assert_eq!(error.code, TransportErrorCode::StreamStateError);
}
