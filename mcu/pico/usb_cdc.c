/* mcu/pico/usb_cdc.c — a USB CDC-ACM serial device on the RP2040's USB
 * controller, written here (contract in mcu/pico/pico.h; the controller's
 * registers and buffer rules from the RP2040 datasheet, section 4.1; the
 * requests from USB 2.0 chapter 9 and the CDC 1.2 / PSTN 1.2 class specs).
 *
 * Shape. Full speed, polled. Endpoint 0 control (64-byte packets), EP1 IN
 * interrupt (the CDC notification endpoint: declared, never sent on), EP2
 * OUT and EP2 IN bulk (64 bytes). Two interfaces: communication (class 2,
 * ACM) and data (class 10). A 512-byte ring holds output until the bulk IN
 * endpoint is free; received bytes go to a 64-byte ring.
 *
 * Identity: VID 0x1209 / PID 0x0001, pid.codes' shared test ID; a product
 * built from this should get its own pair. */
#include <stdint.h>
#include "pico.h"

#define DPRAM 0x50100000u
#define USBC 0x50110000u
#define U(off) PICO_REG(USBC + (off))
#define ADDR_ENDP 0x00u
#define MAIN_CTRL 0x40u
#define SIE_CTRL 0x4Cu
#define SIE_STATUS 0x50u
#define BUFF_STATUS 0x58u
#define EP_STALL_ARM 0x68u
#define USB_MUXING 0x74u
#define USB_PWR 0x78u

#define SIE_SETUP_REC (1u << 17)
#define SIE_BUS_RESET (1u << 19)
#define BUF_FULL (1u << 15)
#define BUF_DATA1 (1u << 13)
#define BUF_AVAILABLE (1u << 10)
#define BUF_STALL (1u << 11)

#define EP0_BUF 0x100u       /* shared by EP0 IN and OUT */
#define EP1_IN_BUF 0x180u
#define EP2_OUT_BUF 0x1C0u
#define EP2_IN_BUF 0x200u
#define PKT 64u
#define TIMEOUT_US 100000u

/* buffer control word of endpoint ep, IN or OUT */
static volatile uint32_t *buf_ctrl(uint32_t ep, int out) {
    return (volatile uint32_t *)(DPRAM + 0x80u + 8u * ep + (out ? 4u : 0u));
}

static const uint8_t dev_desc[18] = {
    18, 1, 0x00, 0x02, 0x02, 0x02, 0x00, PKT,   /* USB 2.0, class CDC, subclass ACM (Windows' usbser.sys
                                                   loads for 02/02 only), EP0 64 bytes */
    0x09, 0x12, 0x01, 0x00, 0x00, 0x01,         /* VID 0x1209, PID 0x0001, release 1.00 */
    1, 2, 0, 1                                  /* manufacturer, product, no serial, 1 configuration */
};

#define CFG_LEN 67u
static const uint8_t cfg_desc[CFG_LEN] = {
    9, 2, CFG_LEN, 0, 2, 1, 0, 0x80, 50,        /* 2 interfaces, bus powered, 100 mA */
    9, 4, 0, 0, 1, 0x02, 0x02, 0x00, 0,         /* interface 0: communication, ACM */
    5, 0x24, 0x00, 0x20, 0x01,                  /* header, CDC 1.20 */
    5, 0x24, 0x01, 0x00, 0x01,                  /* call management: none, data interface 1 */
    4, 0x24, 0x02, 0x02,                        /* ACM: line coding and control line state */
    5, 0x24, 0x06, 0, 1,                        /* union: master 0, slave 1 */
    7, 5, 0x81, 0x03, 8, 0, 16,                 /* EP1 IN interrupt, 8 bytes, 16 ms */
    9, 4, 1, 0, 2, 0x0A, 0, 0, 0,               /* interface 1: data */
    7, 5, 0x02, 0x02, PKT, 0, 0,                /* EP2 OUT bulk */
    7, 5, 0x82, 0x02, PKT, 0, 0                 /* EP2 IN bulk */
};

static const char *const strings[] = { "Atome", "Atome on a Raspberry Pi Pico" };

static struct {
    const uint8_t *tx;           /* EP0 IN data stage still to send */
    uint32_t tx_left;
    int      tx_zlp;             /* end the data stage with a zero-length packet */
    uint32_t pid0;               /* next EP0 IN data PID */
    uint8_t  pending_addr;       /* SET_ADDRESS: applied after the status stage */
    int      want_line_coding;   /* SET_LINE_CODING: its 7 bytes come on EP0 OUT */
    uint8_t  scratch[64];        /* string descriptors, 1- and 2-byte answers */
    uint8_t  line_coding[7];
    int      configured, dtr;
    uint32_t pid_in, pid_out;    /* bulk data toggles */
    int      in_busy, out_armed;
    int      status_out;         /* after an IN data stage: arm EP0 OUT for the status stage */
    uint32_t last_progress;      /* pico_us() when the host last took a packet */
    int      stalled;
} u;

static uint8_t ring[512];
static uint32_t ring_head, ring_tail;   /* free-running; head - tail = queued bytes */
static uint8_t rx[64];
static uint32_t rx_head, rx_tail;

/* Arms a buffer: the control word without AVAILABLE first, then with it,
 * a few cycles later (the datasheet's rule when clk_sys is faster than
 * clk_usb). */
static void arm(volatile uint32_t *ctrl, uint32_t word) {
    *ctrl = word;
    __asm__ volatile ("nop\n nop\n nop\n nop");
    *ctrl = word | BUF_AVAILABLE;
}

static void ep0_in(const uint8_t *p, uint32_t n) {
    volatile uint8_t *b = (volatile uint8_t *)(DPRAM + EP0_BUF);
    for (uint32_t i = 0; i < n; i++) b[i] = p[i];
    arm(buf_ctrl(0, 0), n | BUF_FULL | (u.pid0 ? BUF_DATA1 : 0u));
    u.pid0 ^= 1u;
}

/* The next packet of an IN data stage; once it is all sent, the status
 * stage: the host's zero-length OUT. */
static void ep0_next(void) {
    const uint32_t n = u.tx_left < PKT ? u.tx_left : PKT;
    if (n == 0 && !u.tx_zlp) {
        if (u.status_out) { u.status_out = 0; arm(buf_ctrl(0, 1), PKT | BUF_DATA1); }
        return;
    }
    if (n < PKT) u.tx_zlp = 0;
    ep0_in(u.tx, n);
    u.tx += n;
    u.tx_left -= n;
}

/* A control IN transfer: n bytes, cut to what the host asked for. */
static void ep0_send(const uint8_t *p, uint32_t n, uint32_t asked) {
    if (n > asked) n = asked;
    u.tx = p;
    u.tx_left = n;
    u.tx_zlp = n < asked && n % PKT == 0;   /* a short transfer ends with a short packet */
    u.status_out = 1;
    ep0_next();
}

static void ep0_status(void) { u.pid0 = 1u; ep0_in(0, 0); }

static void ep0_stall(void) {
    U(EP_STALL_ARM) = 3u;
    *buf_ctrl(0, 0) = BUF_STALL;
    *buf_ctrl(0, 1) = BUF_STALL;
}

static uint32_t string_desc(uint32_t i) {
    uint8_t *d = u.scratch;
    if (i == 0) { d[0] = 4; d[1] = 3; d[2] = 0x09; d[3] = 0x04; return 4u; }   /* English (US) */
    const char *s = strings[i - 1];
    uint32_t n = 2;
    for (; *s && n + 2 <= sizeof u.scratch; s++) { d[n++] = (uint8_t)*s; d[n++] = 0; }
    d[0] = (uint8_t)n;
    d[1] = 3;
    return n;
}

/* endpoint n control registers: IN at 0x08 + 8 (n - 1), OUT 4 bytes later */
static void configure(void) {
    PICO_REG(DPRAM + 0x08u) = (1u << 31) | (1u << 29) | (3u << 26) | EP1_IN_BUF;    /* EP1 IN: interrupt */
    PICO_REG(DPRAM + 0x10u) = (1u << 31) | (1u << 29) | (2u << 26) | EP2_IN_BUF;    /* EP2 IN: bulk */
    PICO_REG(DPRAM + 0x14u) = (1u << 31) | (1u << 29) | (2u << 26) | EP2_OUT_BUF;   /* EP2 OUT: bulk */
    u.pid_in = u.pid_out = 0;
    u.in_busy = u.out_armed = 0;
    u.stalled = 0;
    u.configured = 1;
}

static void get_descriptor(uint32_t type, uint32_t index, uint32_t asked) {
    if (type == 1) ep0_send(dev_desc, sizeof dev_desc, asked);
    else if (type == 2) ep0_send(cfg_desc, CFG_LEN, asked);
    else if (type == 3 && index <= 2) ep0_send(u.scratch, string_desc(index), asked);
    else ep0_stall();   /* device qualifier and the rest: a full-speed-only device */
}

static void standard_request(uint32_t req, uint32_t value, uint32_t asked) {
    switch (req) {
    case 0:  u.scratch[0] = u.scratch[1] = 0; ep0_send(u.scratch, 2, asked); break;   /* GET_STATUS */
    case 1: case 3: ep0_status(); break;                                              /* CLEAR/SET_FEATURE */
    case 5:  u.pending_addr = (uint8_t)(value & 0x7Fu); ep0_status(); break;          /* SET_ADDRESS */
    case 6:  get_descriptor(value >> 8, value & 0xFFu, asked); break;
    case 8:  u.scratch[0] = (uint8_t)u.configured; ep0_send(u.scratch, 1, asked); break;
    case 9:  if (value) configure(); else u.configured = 0; ep0_status(); break;       /* SET_CONFIGURATION */
    case 10: u.scratch[0] = 0; ep0_send(u.scratch, 1, asked); break;                  /* GET_INTERFACE */
    case 11: ep0_status(); break;                                                     /* SET_INTERFACE */
    default: ep0_stall(); break;
    }
}

static void class_request(uint32_t req, uint32_t value, uint32_t asked) {
    switch (req) {
    case 0x20: u.want_line_coding = 1; arm(buf_ctrl(0, 1), PKT | BUF_DATA1); break;   /* SET_LINE_CODING */
    case 0x21: ep0_send(u.line_coding, 7, asked); break;                           /* GET_LINE_CODING */
    case 0x22:                                                                     /* SET_CONTROL_LINE_STATE */
        if ((value & 1u) && !u.dtr) u.stalled = 0;   /* a monitor opened the port: send again */
        u.dtr = (int)(value & 1u);
        ep0_status();
        break;
    case 0x23: ep0_status(); break;                                                /* SEND_BREAK */
    default: ep0_stall(); break;
    }
}

static void on_setup(void) {
    volatile const uint8_t *s = (volatile const uint8_t *)DPRAM;
    const uint32_t type = ((uint32_t)s[0] >> 5) & 3u, req = s[1];
    const uint32_t value = (uint32_t)s[2] | ((uint32_t)s[3] << 8);
    const uint32_t asked = (uint32_t)s[6] | ((uint32_t)s[7] << 8);
    u.tx_left = 0;
    u.tx_zlp = 0;
    u.status_out = 0;
    u.want_line_coding = 0;
    u.pid0 = 1u;   /* the first packet after SETUP is DATA1 */
    if (type == 0) standard_request(req, value, asked);
    else if (type == 1) class_request(req, value, asked);
    else ep0_stall();
}

static void send_next(void) {
    uint32_t n = ring_head - ring_tail;
    if (u.in_busy || n == 0 || !u.configured) return;
    if (n > PKT) n = PKT;
    volatile uint8_t *b = (volatile uint8_t *)(DPRAM + EP2_IN_BUF);
    for (uint32_t i = 0; i < n; i++) b[i] = ring[(ring_tail + i) % sizeof ring];
    ring_tail += n;
    arm(buf_ctrl(2, 0), n | BUF_FULL | (u.pid_in ? BUF_DATA1 : 0u));
    u.pid_in ^= 1u;
    u.in_busy = 1;
}

static void on_ep2_out(void) {
    const uint32_t w = *buf_ctrl(2, 1), n = w & 0x3FFu;
    volatile const uint8_t *b = (volatile const uint8_t *)(DPRAM + EP2_OUT_BUF);
    for (uint32_t i = 0; i < n && rx_head - rx_tail < sizeof rx; i++) rx[rx_head++ % sizeof rx] = b[i];
    u.out_armed = 0;
}

static void on_buffers(uint32_t done) {
    if (done & 1u) {   /* EP0 IN sent */
        if (u.pending_addr) { U(ADDR_ENDP) = u.pending_addr; u.pending_addr = 0; }
        ep0_next();
    }
    if (done & 2u) {   /* EP0 OUT: a status stage, or SET_LINE_CODING's data */
        if (u.want_line_coding) {
            volatile const uint8_t *b = (volatile const uint8_t *)(DPRAM + EP0_BUF);
            for (uint32_t i = 0; i < 7; i++) u.line_coding[i] = b[i];
            u.want_line_coding = 0;
            ep0_status();
        }
    }
    if (done & (1u << 4)) { u.in_busy = 0; u.stalled = 0; u.last_progress = pico_us(); }   /* EP2 IN taken */
    if (done & (1u << 5)) on_ep2_out();
}

/* Bus reset first (it voids everything), then finished buffers (they
 * belong to the transfer before any new SETUP), then a new SETUP. */
void usb_cdc_poll(void) {
    const uint32_t st = U(SIE_STATUS);
    if (st & SIE_BUS_RESET) {
        U(SIE_STATUS) = SIE_BUS_RESET;
        U(ADDR_ENDP) = 0u;
        for (uint32_t off = 0x08u; off <= 0x14u; off += 4u) PICO_REG(DPRAM + off) = 0u;          /* EP1, EP2 control */
        for (uint32_t off = 0x88u; off <= 0x94u; off += 4u) PICO_REG(DPRAM + off) = 0u;          /* their buffers */
        U(BUFF_STATUS) = U(BUFF_STATUS);
        u.configured = u.dtr = 0;
        u.in_busy = u.out_armed = u.status_out = u.stalled = 0;
        u.pending_addr = 0;
        ring_tail = ring_head;
    } else {
        const uint32_t done = U(BUFF_STATUS);
        if (done) { U(BUFF_STATUS) = done; on_buffers(done); }
    }
    if (st & SIE_SETUP_REC) { U(SIE_STATUS) = SIE_SETUP_REC; on_setup(); }
    send_next();
}

void usb_cdc_init(void) {
    static const uint8_t coding[7] = { 0x00, 0xC2, 0x01, 0x00, 0, 0, 8 };   /* 115200 8N1 */
    for (uint32_t i = 0; i < 7; i++) u.line_coding[i] = coding[i];
    PICO_REG(PICO_RESETS + PICO_SET) = PICO_RESET_USBCTRL;
    pico_unreset(PICO_RESET_USBCTRL);
    for (uint32_t a = 0; a < 4096u; a += 4u) PICO_REG(DPRAM + a) = 0u;
    U(USB_MUXING) = (1u << 0) | (1u << 3);        /* TO_PHY, SOFTCON */
    U(USB_PWR) = (1u << 2) | (1u << 3);           /* VBUS detect, overridden on */
    U(MAIN_CTRL) = 1u;                            /* CONTROLLER_EN, device mode */
    U(SIE_CTRL) = 1u << 29;                       /* EP0_INT_1BUF */
    U(SIE_CTRL + PICO_SET) = 1u << 16;            /* PULLUP_EN: the host sees us */
    u.last_progress = pico_us();
}

int usb_cdc_configured(void) { return u.configured; }
int usb_cdc_open(void) { return u.configured && u.dtr; }

void usb_cdc_putc(uint8_t b) {
    if (!usb_cdc_open() || u.stalled) return;
    while (ring_head - ring_tail >= sizeof ring) {   /* full: wait for the host, a while */
        usb_cdc_poll();
        if (!usb_cdc_open()) return;
        if ((uint32_t)(pico_us() - u.last_progress) > TIMEOUT_US) { u.stalled = 1; return; }
    }
    if (ring_head == ring_tail && !u.in_busy) u.last_progress = pico_us();
    ring[ring_head++ % sizeof ring] = b;
    usb_cdc_poll();
}

void usb_cdc_drain(void) {
    while (usb_cdc_open() && !u.stalled && (ring_head != ring_tail || u.in_busy)) {
        usb_cdc_poll();
        if ((uint32_t)(pico_us() - u.last_progress) > TIMEOUT_US) u.stalled = 1;
    }
}

int usb_cdc_getc(void) {
    usb_cdc_poll();
    if (u.configured && !u.out_armed && rx_head - rx_tail < sizeof rx - PKT + 1u) {
        arm(buf_ctrl(2, 1), PKT | (u.pid_out ? BUF_DATA1 : 0u));
        u.pid_out ^= 1u;
        u.out_armed = 1;
    }
    if (rx_head == rx_tail) return -1;
    return rx[rx_tail++ % sizeof rx];
}
