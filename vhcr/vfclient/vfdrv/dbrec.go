package vfdrv

import "github.com/vhcrd/vhcrd/vhcr/mlx4"

// Doorbell records, as libmlx4's dbrec.c hands them out: pages of the VF's
// memory cut into records of one size per page kind (a CQ's 8 bytes,
// set_ci then arm_db; an RQ's 4 bytes), each record's address written into
// its object's context (db_rec_addr) and the record zeroed when it is
// taken (mlx4_create_cq, mlx4_create_qp: *db = 0).

// dbKind is a doorbell record's kind (dbrec.c enum mlx4_db_type).
type dbKind int

const (
	dbCQ dbKind = iota // set_ci + arm_db
	dbRQ               // the receive queue's head
)

// dbPage is one page of records of one kind.
type dbPage struct {
	iova uint64
	used []bool
}

// dbPool hands out doorbell records by kind.
type dbPool struct {
	pages [2][]*dbPage
}

// dbSize is the bytes of a record of kind k (dbrec.c db_size[]).
func dbSize(k dbKind) int {
	if k == dbCQ {
		return mlx4.CQDBRecSize
	}
	return mlx4.RQDBRecSize
}

// allocDB takes a zeroed record of kind k, adding a page when every record
// is taken (mlx4_alloc_db).
func (d *Driver) allocDB(k dbKind) (uint64, error) {
	size := dbSize(k)
	for _, p := range d.db.pages[k] {
		for i, u := range p.used {
			if !u {
				p.used[i] = true
				iova := p.iova + uint64(i*size)
				d.zero(iova, size)
				return iova, nil
			}
		}
	}
	iova, err := d.pool.get(1)
	if err != nil {
		return 0, err
	}
	p := &dbPage{iova: iova, used: make([]bool, mlx4.PageSize/size)}
	p.used[0] = true
	d.db.pages[k] = append(d.db.pages[k], p)
	d.zero(iova, size)
	return iova, nil
}

// freeDB returns a record (mlx4_free_db); its page stays with the pool.
func (d *Driver) freeDB(k dbKind, iova uint64) {
	size := uint64(dbSize(k))
	for _, p := range d.db.pages[k] {
		if iova >= p.iova && iova < p.iova+mlx4.PageSize {
			p.used[(iova-p.iova)/size] = false
			return
		}
	}
}

// zero clears n bytes of the VF's memory at iova.
func (d *Driver) zero(iova uint64, n int) { dmaZero(d.mem[iova : iova+uint64(n)]) }
