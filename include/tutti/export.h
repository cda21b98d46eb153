/* Symbol visibility: the library is built with hidden visibility; only TUTTI_API is exported. */
#ifndef TUTTI_EXPORT_H_
#define TUTTI_EXPORT_H_
#if defined(TUTTI_BUILDING_LIBRARY)
#define TUTTI_API __attribute__((visibility("default")))
#else
#define TUTTI_API
#endif
#endif /* TUTTI_EXPORT_H_ */
