/* Fuzz every decoder of bytes that arrive from a socket. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_hdr h;
	struct wire_entry e, *book;
	struct wire_auth a;
	struct wire_note n;
	struct wire_data_hdr d;
	struct wire_buf b;
	uint32_t nranks;

	if (size >= WIRE_HDR_LEN)
		(void)wire_hdr_decode(&h, data);
	if (size >= WIRE_DATA_HDR_LEN)
		(void)wire_data_hdr_decode(&d, data);
	wire_buf_init(&b, (void *)data, size);
	(void)wire_entry_decode(&b, &e);
	for (uint8_t t = WIRE_AUTH_HELLO; t <= WIRE_AUTH_PROOF; t++)
		(void)wire_auth_decode(data, size, t, &a);
	(void)wire_note_decode(data, size, &n);
	{
		static struct wire_failed_set f;
		uint64_t end = 0;

		/* Accepted ranges lie within the ranks given, ascending and apart. */
		if (wire_failed_set_decode(data, size, 1000, &f) == COLL_OK)
			for (uint32_t i = 0; i < f.n; i++) {
				if (f.count[i] == 0 || f.first[i] < end ||
				    (uint64_t)f.first[i] + f.count[i] > 1000)
					abort();
				end = (uint64_t)f.first[i] + f.count[i] + 1;
			}
	}
	/* A proxy's frames: the inner frame must lie within the outer one. */
	{
		struct wire_mux m;
		uint32_t ch, ms;

		if (wire_mux_decode(data, (uint32_t)size, &m) == COLL_OK &&
		    (m.p != data + WIRE_MUX_HDR_LEN || m.len != size - WIRE_MUX_HDR_LEN))
			abort();
		(void)wire_mux_end_decode(data, (uint32_t)size, &ch, &ms);
	}
	/* The book decoder is told the size it expects, as a rank is. */
	nranks = size > 0 ? (uint32_t)(data[0] % 64) + 1 : 1;
	book = calloc(nranks, sizeof *book);
	if (book != NULL)
		{
			uint32_t first, count;
			(void)wire_book_decode(data, size, nranks, book, &first, &count);
		}
	free(book);
	return 0;
}
