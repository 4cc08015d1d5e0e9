/* Bitwise CRC-32 (no table): a branch per bit. */
#include <stdint.h>
#include <stdio.h>

int main(void)
{
	static unsigned char buf[1 << 16];
	uint32_t crc = 0xffffffffu;

	for (unsigned i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 7 + (i >> 5));
	for (int round = 0; round < 120; round++)
		for (unsigned i = 0; i < sizeof(buf); i++) {
			crc ^= buf[i];
			for (int b = 0; b < 8; b++)
				if (crc & 1)
					crc = (crc >> 1) ^ 0xedb88320u;
				else
					crc >>= 1;
		}
	printf("crc32 %08x\n", crc ^ 0xffffffffu);
	return 0;
}
