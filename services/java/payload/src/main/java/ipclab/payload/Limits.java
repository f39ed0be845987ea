package ipclab.payload;

/**
 * What the server grants one client, the values of {@code services/limits.py} (the Python
 * and Go servers'; a test compares the files): a request's head within
 * {@link #HEADER_TIMEOUT_S} of its connection's opening or of its first byte, the whole
 * request within {@link #READ_TIMEOUT_S} of that, and a keep-alive connection closed after
 * {@link #IDLE_TIMEOUT_S} without a new request. {@link Deadlines} applies them.
 */
final class Limits {
    static final double HEADER_TIMEOUT_S = 5.0;
    static final double READ_TIMEOUT_S = 30.0;
    static final double IDLE_TIMEOUT_S = 75.0;

    private Limits() {
    }
}
